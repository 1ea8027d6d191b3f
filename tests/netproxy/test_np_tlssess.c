/* netproxy's kept upstream TLS sessions (tlssess.c) without sockets: a session is
 * never given under another key (host, port or spoke), the newest first, each taken
 * once while others remain and the last offered again, expired and unresumable ones
 * never offered, a failed handshake's key emptied, and the bounds held. */
#include "netproxy/intercept/intercept.h"
#include "tests/unit/test.h"

#include <openssl/ssl.h>
#include <time.h>

/* A resumable session (it has an id) made at `made`, valid for `timeout` seconds. */
static SSL_SESSION *session(unsigned char tag, time_t made, long timeout)
{
    SSL_SESSION *s = SSL_SESSION_new();
    unsigned char id[32];
    memset(id, tag, sizeof(id));
    SSL_SESSION_set1_id(s, id, sizeof(id));
    SSL_SESSION_set_time(s, (long)made);
    SSL_SESSION_set_timeout(s, timeout);
    return s;
}

static unsigned char tag_of(SSL_SESSION *s)
{
    unsigned len = 0;
    const unsigned char *id = s ? SSL_SESSION_get_id(s, &len) : NULL;
    return id && len ? id[0] : 0;
}

/* Takes one and says whose it was (0: none). */
static unsigned char take(struct tlssess *t, const char *key)
{
    SSL_SESSION *s = tlssess_take(t, key);
    unsigned char tag = tag_of(s);
    SSL_SESSION_free(s);
    return tag;
}

int main(void)
{
    char k1[400], k_host[400], k_port[400], k_spoke[400], key[400];
    CHECK(tlssess_key(k1, sizeof(k1), "api.example.com", 443, "s1") &&
              tlssess_key(k_host, sizeof(k_host), "api.example.co", 443, "s1") &&
              tlssess_key(k_port, sizeof(k_port), "api.example.com", 8443, "s1") &&
              tlssess_key(k_spoke, sizeof(k_spoke), "api.example.com", 443, "s2"),
          "keys are made");
    CHECK(strcmp(k1, k_host) && strcmp(k1, k_port) && strcmp(k1, k_spoke),
          "another host, port or spoke is another key");
    CHECK(!tlssess_key(key, 8, "api.example.com", 443, "s1"), "a key that does not fit is refused");

    struct tlssess *t = tlssess_new();
    time_t now = time(NULL);
    CHECK(take(t, k1) == 0, "nothing to resume at first");
    tlssess_put(t, k1, session('A', now, 300));
    tlssess_put(t, k1, session('B', now, 300));
    CHECK(take(t, k_host) == 0 && take(t, k_port) == 0 && take(t, k_spoke) == 0,
          "a session is never given under another host, port or spoke");
    CHECK(take(t, k1) == 'B', "the newest first");
    CHECK(tlssess_count(t) == 1, "... and it is taken (one left)");
    CHECK(take(t, k1) == 'A' && take(t, k1) == 'A', "the last one is offered again");
    tlssess_put(t, k1, session('C', now, 300));
    CHECK(take(t, k1) == 'C' && take(t, k1) == 'A', "a newer one goes first, the older stays");

    tlssess_forget(t, k1);
    CHECK(take(t, k1) == 0 && tlssess_count(t) == 0, "a failed handshake's key is emptied");

    tlssess_put(t, k1, session('O', now - 1000, 300));
    CHECK(take(t, k1) == 0 && tlssess_count(t) == 0, "an expired session is dropped, not offered");
    tlssess_put(t, k1, session('N', now, 300));
    tlssess_put(t, k1, session('O', now - 1000, 300));
    CHECK(take(t, k1) == 'N', "... also behind a usable one");

    SSL_SESSION *noid = SSL_SESSION_new();
    tlssess_put(t, k_spoke, noid);
    CHECK(take(t, k_spoke) == 0, "a session that cannot be resumed is not kept");

    tlssess_forget(t, k1);
    for (int i = 0; i < 40; i++)
        tlssess_put(t, k1, session((unsigned char)('a' + i % 26), now, 300));
    CHECK(tlssess_count(t) == 16, "at most 16 per key (%zu)", tlssess_count(t));
    for (int i = 0; i < 100; i++) {
        char host[64];
        snprintf(host, sizeof(host), "h%d.example", i);
        tlssess_key(key, sizeof(key), host, 443, "s1");
        tlssess_put(t, key, session('h', now, 300));
    }
    CHECK(tlssess_count(t) == 64, "at most 64 keys, the least recently used goes (%zu)",
          tlssess_count(t));
    CHECK(take(t, k1) == 0, "... the oldest key went first");
    tlssess_key(key, sizeof(key), "h99.example", 443, "s1");
    CHECK(take(t, key) == 'h', "... the newest stayed");
    tlssess_free(t);
    return test_done();
}
