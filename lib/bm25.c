/* BM25 over weighted fields (bm25.h). Documents are few (hundreds of tools) and short,
 * so each keeps a sorted array of its terms and a query looks each of its terms up in
 * every document: no inverted index to keep in step. */
#include "bm25.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define TERM_MAX 48
#define BM25_K1 1.2
#define BM25_B 0.75

struct doc {
    char **terms; /* sorted, unique */
    double *tf;   /* weighted frequency of each */
    size_t n;
    double len; /* weighted length */
};

struct bm25 {
    struct doc *docs;
    size_t n, cap;
    double total_len;
};

/* Words that say nothing about which tool is meant. */
static const char *const stop_words[] = {
    "a",    "an",   "and", "any", "are",    "as",   "at",    "be",   "by",  "can",   "do",
    "for",  "from", "i",   "if",  "in",     "into", "is",    "it",   "its", "me",    "my",
    "of",   "on",   "or",  "our", "please", "so",   "some",  "that", "the", "their", "them",
    "then", "this", "to",  "us",  "we",     "what", "which", "with", "you", "your",  NULL};

static bool is_stop(const char *t)
{
    for (size_t i = 0; stop_words[i]; i++)
        if (strcmp(t, stop_words[i]) == 0)
            return true;
    return false;
}

static bool ends(const char *t, size_t n, const char *suf)
{
    size_t s = strlen(suf);
    return n > s && memcmp(t + n - s, suf, s) == 0;
}

/* A light suffix stripper: plurals, -ing, -ed, then a final e, so that create,
 * creates, created and creating are one term (creat). */
static void stem(char *t)
{
    size_t n = strlen(t);
    if (n > 4 && ends(t, n, "ies")) {
        strcpy(t + n - 3, "y");
        n -= 2;
    } else if (n > 4 && ends(t, n, "sses")) {
        n -= 2;
    } else if (n > 5 && ends(t, n, "ing")) {
        n -= 3;
    } else if (n > 4 && ends(t, n, "ed") && !ends(t, n, "eed")) {
        n -= 2;
    } else if (n > 3 && ends(t, n, "s") && !ends(t, n, "ss") && !ends(t, n, "us") &&
               !ends(t, n, "is")) {
        n -= 1;
    }
    t[n] = '\0';
    /* running -> runn -> run; but not add, all, pass */
    if (n > 3 && t[n - 1] == t[n - 2] && !strchr("lsz", t[n - 1]) && !strchr("aeiou", t[n - 1]))
        t[--n] = '\0';
    if (n > 3 && t[n - 1] == 'e')
        t[--n] = '\0';
}

static bool is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_alnum(char c)
{
    return is_lower(c) || is_upper(c) || (c >= '0' && c <= '9');
}

static void emit(char *t, size_t n, void (*fn)(void *, const char *), void *ud)
{
    t[n < TERM_MAX ? n : TERM_MAX] = '\0';
    stem(t);
    if (t[0] && !is_stop(t))
        fn(ud, t);
}

/* Calls fn for each term of text. A word split at case changes also gives its whole
 * (GitHub: git, hub and github), so that "github" finds it as "GitHub" does. */
static void each_term(const char *text, void (*fn)(void *, const char *), void *ud)
{
    char t[TERM_MAX + 1], word[TERM_MAX + 1];
    size_t n = 0, wn = 0;
    bool case_split = false;
    for (const char *p = text;; p++) {
        char c = *p;
        bool alnum = is_alnum(c);
        bool split = !alnum || (n > 0 && is_upper(c) && is_lower(p[-1]));
        if (split && n > 0) {
            emit(t, n, fn, ud);
            n = 0;
            case_split |= alnum;
        }
        if (!alnum && wn > 0) {
            if (case_split)
                emit(word, wn, fn, ud);
            wn = 0;
            case_split = false;
        }
        if (!c)
            break;
        if (alnum) {
            char lc = is_upper(c) ? (char)(c - 'A' + 'a') : c;
            if (n < TERM_MAX)
                t[n] = lc;
            n++;
            if (wn < TERM_MAX)
                word[wn] = lc;
            wn++;
        }
    }
}

struct collect {
    char **terms;
    double *tf;
    size_t n, cap;
    double weight;
};

static void collect_term(void *ud, const char *t)
{
    struct collect *c = ud;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->terms[i], t) == 0) {
            c->tf[i] += c->weight;
            return;
        }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->terms = xrealloc(c->terms, c->cap * sizeof(*c->terms));
        c->tf = xrealloc(c->tf, c->cap * sizeof(*c->tf));
    }
    c->terms[c->n] = xstrdup(t);
    c->tf[c->n++] = c->weight;
}

/* ln(x) for x >= 1 without libm (the binaries link none): x halved to [1, 2), then
 * ln(m) = 2 atanh((m - 1) / (m + 1)), whose series converges fast there. */
static double ln(double x)
{
    double k = 0;
    while (x >= 2) {
        x /= 2;
        k++;
    }
    double y = (x - 1) / (x + 1), y2 = y * y, term = y, sum = 0;
    for (int i = 1; i < 40; i += 2) {
        sum += term / i;
        term *= y2;
    }
    return k * 0.69314718055994530942 + 2 * sum;
}

struct bm25 *bm25_new(void)
{
    return xcalloc(1, sizeof(struct bm25));
}

void bm25_free(struct bm25 *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->n; i++) {
        for (size_t j = 0; j < ix->docs[i].n; j++)
            free(ix->docs[i].terms[j]);
        free(ix->docs[i].terms);
        free(ix->docs[i].tf);
    }
    free(ix->docs);
    free(ix);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t bm25_add(struct bm25 *ix, const struct bm25_field *fields, size_t n_fields)
{
    struct collect c = {0};
    for (size_t f = 0; f < n_fields; f++) {
        if (!fields[f].text || fields[f].weight <= 0)
            continue;
        c.weight = fields[f].weight;
        each_term(fields[f].text, collect_term, &c);
    }
    /* Sorted by term, the frequencies moved along. */
    size_t *order = xcalloc(c.n ? c.n : 1, sizeof(size_t));
    char **sorted = xcalloc(c.n ? c.n : 1, sizeof(char *));
    for (size_t i = 0; i < c.n; i++)
        sorted[i] = c.terms[i];
    qsort(sorted, c.n, sizeof(char *), cmp_str);
    double *tf = xcalloc(c.n ? c.n : 1, sizeof(double));
    double len = 0;
    for (size_t i = 0; i < c.n; i++) {
        for (size_t j = 0; j < c.n; j++)
            if (c.terms[j] == sorted[i])
                order[i] = j;
        tf[i] = c.tf[order[i]];
        len += tf[i];
    }
    free(order);
    free(c.terms);
    free(c.tf);
    if (ix->n == ix->cap) {
        ix->cap = ix->cap ? ix->cap * 2 : 64;
        ix->docs = xrealloc(ix->docs, ix->cap * sizeof(*ix->docs));
    }
    ix->docs[ix->n] = (struct doc){.terms = sorted, .tf = tf, .n = c.n, .len = len};
    ix->total_len += len;
    return ix->n++;
}

static double doc_tf(const struct doc *d, const char *term)
{
    char *const *hit = d->n ? bsearch(&term, d->terms, d->n, sizeof(char *), cmp_str) : NULL;
    return hit ? d->tf[hit - d->terms] : 0;
}

struct query {
    char terms[BM25_MAX_QUERY_TERMS][TERM_MAX + 1];
    size_t n;
};

static void query_term(void *ud, const char *t)
{
    struct query *q = ud;
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->terms[i], t) == 0)
            return;
    if (q->n < BM25_MAX_QUERY_TERMS)
        str_copy(q->terms[q->n++], t, TERM_MAX + 1);
}

size_t bm25_search(const struct bm25 *ix, const char *query, size_t *out, double *scores, size_t k)
{
    if (!ix->n || !k)
        return 0;
    struct query q = {0};
    each_term(query, query_term, &q);
    double *score = xcalloc(ix->n, sizeof(double));
    double avg = ix->total_len / (double)ix->n;
    if (avg <= 0)
        avg = 1;
    for (size_t t = 0; t < q.n; t++) {
        size_t df = 0;
        for (size_t d = 0; d < ix->n; d++)
            df += doc_tf(&ix->docs[d], q.terms[t]) > 0;
        if (!df)
            continue;
        double idf = ln(1 + ((double)ix->n - (double)df + 0.5) / ((double)df + 0.5));
        for (size_t d = 0; d < ix->n; d++) {
            double tf = doc_tf(&ix->docs[d], q.terms[t]);
            if (tf > 0)
                score[d] += idf * tf * (BM25_K1 + 1) /
                            (tf + BM25_K1 * (1 - BM25_B + BM25_B * ix->docs[d].len / avg));
        }
    }
    /* Selection of the k best, ties to the earlier document. */
    size_t n = 0;
    for (size_t d = 0; d < ix->n; d++) {
        if (score[d] <= 0)
            continue;
        size_t pos = n < k ? n : k;
        while (pos > 0 && score[out[pos - 1]] < score[d])
            pos--;
        if (pos >= k)
            continue;
        size_t last = n < k ? n : k - 1;
        memmove(out + pos + 1, out + pos, (last - pos) * sizeof(size_t));
        out[pos] = d;
        if (n < k)
            n++;
    }
    if (scores)
        for (size_t i = 0; i < n; i++)
            scores[i] = score[out[i]];
    free(score);
    return n;
}

struct join {
    char *buf;
    size_t len, used;
};

static void join_term(void *ud, const char *t)
{
    struct join *j = ud;
    size_t n = strlen(t);
    if (j->used + n + 2 > j->len)
        return;
    if (j->used)
        j->buf[j->used++] = ' ';
    memcpy(j->buf + j->used, t, n);
    j->used += n;
    j->buf[j->used] = '\0';
}

void bm25_terms(const char *text, char *buf, size_t len)
{
    if (!len)
        return;
    buf[0] = '\0';
    struct join j = {.buf = buf, .len = len};
    each_term(text, join_term, &j);
}
