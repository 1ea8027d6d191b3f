#include "tlssess.h"

#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define KEYS 64
#define PER_KEY 16
#define KEY_MAX (254 + 6 + 2 + 65)

struct entry {
    char key[KEY_MAX];
    SSL_SESSION *s[PER_KEY]; /* s[0..n-1], newest last */
    unsigned n;
    unsigned long use;
};

struct tlssess {
    pthread_mutex_t lock;
    struct entry e[KEYS];
    unsigned long clock;
};

struct tlssess *tlssess_new(void)
{
    struct tlssess *t = xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

static void entry_clear(struct entry *e)
{
    for (unsigned i = 0; i < e->n; i++)
        SSL_SESSION_free(e->s[i]);
    memset(e, 0, sizeof(*e));
}

void tlssess_free(struct tlssess *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < KEYS; i++)
        entry_clear(&t->e[i]);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

bool tlssess_key(char *buf, size_t len, const char *host, unsigned port, const char *spoke)
{
    /* A host name holds no '|', so the key reads back one way only. */
    int n = snprintf(buf, len, "%s:%u|%s", host, port, spoke);
    return n > 0 && (size_t)n < len && (size_t)n < KEY_MAX;
}

static struct entry *find(struct tlssess *t, const char *key)
{
    for (size_t i = 0; i < KEYS; i++)
        if (t->e[i].n && strcmp(t->e[i].key, key) == 0)
            return &t->e[i];
    return NULL;
}

static bool usable(SSL_SESSION *s, time_t now)
{
    return SSL_SESSION_is_resumable(s) &&
           (time_t)(SSL_SESSION_get_time(s) + SSL_SESSION_get_timeout(s)) > now;
}

SSL_SESSION *tlssess_take(struct tlssess *t, const char *key)
{
    time_t now = time(NULL);
    SSL_SESSION *got = NULL;
    pthread_mutex_lock(&t->lock);
    struct entry *e = find(t, key);
    while (e && e->n && !got) {
        SSL_SESSION *s = e->s[e->n - 1];
        if (!usable(s, now)) {
            SSL_SESSION_free(s);
            e->s[--e->n] = NULL;
        } else if (e->n > 1) { /* taken: the next tunnel gets another */
            got = s;
            e->s[--e->n] = NULL;
        } else { /* the last one stays, to be offered again until a newer one comes */
            SSL_SESSION_up_ref(s);
            got = s;
        }
    }
    if (e && !e->n)
        entry_clear(e);
    else if (e)
        e->use = ++t->clock;
    pthread_mutex_unlock(&t->lock);
    return got;
}

void tlssess_put(struct tlssess *t, const char *key, SSL_SESSION *s)
{
    if (!SSL_SESSION_is_resumable(s) || strlen(key) >= KEY_MAX) {
        SSL_SESSION_free(s);
        return;
    }
    pthread_mutex_lock(&t->lock);
    struct entry *e = find(t, key);
    if (!e) {
        /* A free slot, else the least recently used key's. */
        e = &t->e[0];
        for (size_t i = 0; i < KEYS; i++) {
            if (!t->e[i].n) {
                e = &t->e[i];
                break;
            }
            if (t->e[i].use < e->use)
                e = &t->e[i];
        }
        entry_clear(e);
        str_copy(e->key, key, sizeof(e->key));
    }
    if (e->n == PER_KEY) { /* the oldest goes */
        SSL_SESSION_free(e->s[0]);
        memmove(e->s, e->s + 1, (PER_KEY - 1) * sizeof(e->s[0]));
        e->n--;
    }
    e->s[e->n++] = s;
    e->use = ++t->clock;
    pthread_mutex_unlock(&t->lock);
}

void tlssess_forget(struct tlssess *t, const char *key)
{
    pthread_mutex_lock(&t->lock);
    struct entry *e = find(t, key);
    if (e)
        entry_clear(e);
    pthread_mutex_unlock(&t->lock);
}

size_t tlssess_count(struct tlssess *t)
{
    size_t n = 0;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < KEYS; i++)
        n += t->e[i].n;
    pthread_mutex_unlock(&t->lock);
    return n;
}
