/* Answers scrubbed of the spoke's values without sockets (issue 34 finding 3): the
 * scrubber (scrub.c) on a value as it is, percent-encoded, inside base64 at every
 * offset, cut at every byte; and the HTTP/1.1 answers' framing (h1answer.c): a value
 * cut by chunking at every position, Content-Length kept true, HEAD, 1xx and pipelined
 * answers, trailers, and a head that does not parse (scrubbed as a plain stream). */
#include "netproxy/intercept/intercept.h"
#include "tests/unit/test.h"
#include "util.h"

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* As the hub makes them: the same length, separators in place. */
#define API_STANDIN "ghp_STANDINstandin0123456789abcdef"
#define API_VALUE "ghp_REALrealreal0123456789abcdefgh"
/* Another length (a binding the hub did not make): the mask is the stand-in repeated. */
#define PW_STANDIN "pw_STANDIN0123456789"
#define PW_VALUE "pw/REAL+value=0123456789ab"

static int found;

static void on_found(void *ud, const struct cred *c)
{
    (void)ud;
    (void)c;
    found++;
}

static struct cred_set *make_set(void)
{
    const char *text =
        "[{\"name\":\"api\",\"standin\":\"" API_STANDIN "\",\"value\":\"" API_VALUE "\","
        "\"hosts\":[\"api.example.com\"]},"
        "{\"name\":\"pw\",\"standin\":\"" PW_STANDIN "\",\"value\":\"" PW_VALUE "\","
        "\"hosts\":[\"files.example\"]}]";
    json_t *arr = json_loads(text, 0, NULL);
    char err[300];
    struct cred_set *s = cred_set_parse(arr, err, sizeof(err));
    CHECK(s && s->n == 2, "two bindings parse (%s)", s ? "" : err);
    json_decref(arr);
    return s;
}

/* out's bytes as a NUL-terminated string (caller frees). */
static char *take(struct evbuffer *out, size_t *len)
{
    size_t n = evbuffer_get_length(out);
    char *s = xmalloc(n + 1);
    evbuffer_remove(out, s, n);
    s[n] = '\0';
    if (len)
        *len = n;
    return s;
}

static bool has(const char *buf, size_t len, const char *what)
{
    return memmem(buf, len, what, strlen(what)) != NULL;
}

static void test_plain(struct cred_set *set)
{
    struct scrub *sc = scrub_new(set, on_found, NULL);
    struct evbuffer *out = evbuffer_new();
    const char *in = "{\"echo\":\"" API_VALUE "\",\"again\":\"" API_VALUE "\"}";
    const char *want = "{\"echo\":\"" API_STANDIN "\",\"again\":\"" API_STANDIN "\"}";
    found = 0;
    scrub_feed(sc, in, strlen(in), out);
    scrub_flush(sc, out);
    char *got = take(out, NULL);
    CHECK_STR(got, want, "a value, twice, becomes its stand-in");
    CHECK(found == 2, "... each occurrence told (%d)", found);
    free(got);
    /* Cut at every byte, and fed a byte at a time. */
    size_t n = strlen(in);
    int bad = 0;
    for (size_t cut = 0; cut <= n; cut++) {
        scrub_feed(sc, in, cut, out);
        scrub_feed(sc, in + cut, n - cut, out);
        scrub_flush(sc, out);
        got = take(out, NULL);
        bad += strcmp(got, want) != 0;
        free(got);
    }
    CHECK(bad == 0, "... cut in two at each of %zu places (%d wrong)", n + 1, bad);
    for (size_t i = 0; i < n; i++)
        scrub_feed(sc, in + i, 1, out);
    scrub_flush(sc, out);
    got = take(out, NULL);
    CHECK_STR(got, want, "... fed a byte at a time");
    free(got);
    /* A tail that may begin a value is held; one that may not is not. */
    scrub_feed(sc, "abc ghp_RE", 10, out);
    CHECK(scrub_held(sc) == 6 && evbuffer_get_length(out) == 4,
          "a tail that begins a value waits for the next bytes (%zu held)", scrub_held(sc));
    scrub_flush(sc, out);
    got = take(out, NULL);
    CHECK_STR(got, "abc ghp_RE", "... and goes as it is when the stream ends");
    free(got);
    scrub_feed(sc, "abc }", 5, out);
    CHECK(scrub_held(sc) == 0 && evbuffer_get_length(out) == 5,
          "an ordinary end is not held (an answer is not delayed)");
    evbuffer_drain(out, 5);
    char piece[] = "Bearer " API_VALUE;
    scrub_piece(sc, piece, strlen(piece));
    CHECK_STR(piece, "Bearer " API_STANDIN, "a header value scrubbed in place");
    scrub_feed(NULL, "x" API_VALUE, 1 + strlen(API_VALUE), out);
    CHECK(evbuffer_get_length(out) == 1 + strlen(API_VALUE),
          "no scrubber (no secrets): everything passes");
    evbuffer_drain(out, evbuffer_get_length(out));
    evbuffer_free(out);
    scrub_free(sc);
}

static void test_encodings(struct cred_set *set)
{
    struct scrub *sc = scrub_new(set, on_found, NULL);
    struct evbuffer *out = evbuffer_new();
    /* Another length: the mask is the stand-in repeated to the value's length. */
    char in[200], want_mask[sizeof(PW_VALUE)];
    for (size_t i = 0; i < strlen(PW_VALUE); i++)
        want_mask[i] = PW_STANDIN[i % strlen(PW_STANDIN)];
    want_mask[strlen(PW_VALUE)] = '\0';
    snprintf(in, sizeof(in), "[%s]", PW_VALUE);
    scrub_feed(sc, in, strlen(in), out);
    scrub_flush(sc, out);
    size_t gl;
    char *got = take(out, &gl);
    CHECK(gl == strlen(in) && has(got, gl, want_mask) && !has(got, gl, PW_VALUE),
          "a stand-in of another length: a mask as long as the value (%s)", got);
    free(got);
    /* Percent-encoded, upper and lower case hex. */
    const char *pct[] = {"pw%2FREAL%2Bvalue%3D0123456789ab", "pw%2fREAL%2bvalue%3d0123456789ab"};
    for (int i = 0; i < 2; i++) {
        found = 0;
        scrub_feed(sc, pct[i], strlen(pct[i]), out);
        scrub_flush(sc, out);
        got = take(out, &gl);
        CHECK(gl == strlen(pct[i]) && !has(got, gl, "REAL") && found == 1,
              "percent-encoded (%s hex): replaced, the length kept (%s)", i ? "lower" : "upper",
              got);
        free(got);
    }
    /* Inside base64 at every offset, standard and URL alphabet (a Basic credential is
     * base64 of "user:value"). */
    int leaks = 0, misses = 0;
    for (int url = 0; url < 2; url++)
        for (size_t pre = 0; pre < 6; pre++) {
            char raw[100];
            int rl = snprintf(raw, sizeof(raw), "%.*s%s~~", (int)pre, "user:x", API_VALUE);
            unsigned char enc[200], dec[200];
            int el = EVP_EncodeBlock(enc, (unsigned char *)raw, rl);
            if (url)
                for (int i = 0; i < el; i++)
                    enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
            scrub_feed(sc, (char *)enc, (size_t)el, out);
            scrub_flush(sc, out);
            got = take(out, &gl);
            if (url)
                for (size_t i = 0; i < gl; i++)
                    got[i] = got[i] == '-' ? '+' : got[i] == '_' ? '/' : got[i];
            int dl = EVP_DecodeBlock(dec, (unsigned char *)got, (int)gl);
            leaks += dl < 0 || has((char *)dec, (size_t)dl, API_VALUE) ||
                     has((char *)dec, (size_t)dl, "REALreal");
            /* Inside, the stand-in (a value's first and last bits may mix with its
             * neighbours' in one character each). */
            misses += dl < 0 || !has((char *)dec, (size_t)dl, "STANDINstandin0123456789abcde");
            free(got);
        }
    CHECK(leaks == 0 && misses == 0,
          "inside base64 at each of 3 offsets (6 prefixes, 2 alphabets): decoded, the stand-in "
          "and no value (%d leaks, %d misses)",
          leaks, misses);
    evbuffer_free(out);
    scrub_free(sc);
}

/* The data and the trailer section of a chunked body in buf; NULL if malformed. */
static char *dechunk(const char *buf, size_t len, size_t *dlen, const char **trailers)
{
    char *data = xmalloc(len + 1);
    size_t n = 0;
    const char *p = buf, *end = buf + len;
    for (;;) {
        char *e;
        unsigned long size = strtoul(p, &e, 16);
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        if (e == p || !lf) {
            free(data);
            return NULL;
        }
        p = lf + 1;
        if (size == 0)
            break;
        if ((size_t)(end - p) < size + 2) {
            free(data);
            return NULL;
        }
        memcpy(data + n, p, size);
        n += size;
        p += size + 2;
    }
    data[n] = '\0';
    *dlen = n;
    *trailers = p;
    return data;
}

static void test_h1_framing(struct cred_set *set)
{
    struct scrub *sc = scrub_new(set, on_found, NULL);
    struct evbuffer *out = evbuffer_new();
    const char *json = "{\"echo\":\"" API_VALUE "\"}";
    size_t jl = strlen(json);
    int bad = 0;
    /* Two chunks cut at each place through the body, so through the value. */
    for (size_t cut = 1; cut < jl; cut++) {
        struct h1ans *a = h1ans_new();
        h1ans_request(a, "GET", 3);
        char resp[600];
        int rl = snprintf(resp, sizeof(resp),
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Echo: %s\r\n\r\n"
                          "%zx;ext=1\r\n%.*s\r\n%zx\r\n%s\r\n0\r\nX-Trailer: %s\r\n\r\n",
                          API_VALUE, cut, (int)cut, json, jl - cut, json + cut, API_VALUE);
        /* and fed in two reads cut at another place */
        size_t at = (size_t)rl * cut / jl;
        h1ans_feed(a, sc, resp, at, out);
        h1ans_feed(a, sc, resp + at, (size_t)rl - at, out);
        size_t gl, dl;
        char *got = take(out, &gl);
        const char *body = strstr(got, "\r\n\r\n"), *trailers = NULL;
        char *data = body ? dechunk(body + 4, gl - (size_t)(body + 4 - got), &dl, &trailers) : NULL;
        bool good = data && !has(got, gl, API_VALUE) && strstr(got, "X-Echo: " API_STANDIN) &&
                    strcmp(data, "{\"echo\":\"" API_STANDIN "\"}") == 0 &&
                    strcmp(trailers, "X-Trailer: " API_STANDIN "\r\n\r\n") == 0 && h1ans_between(a);
        if (!good && !bad)
            printf("# cut %zu: %s\n", cut, got);
        bad += !good;
        free(data);
        free(got);
        h1ans_free(a);
    }
    CHECK(bad == 0,
          "chunked: the value cut by chunking at each of %zu places is its stand-in in the body, "
          "the head and the trailer, chunked again (%d wrong)",
          jl - 1, bad);

    /* HEAD (a length, no body), 100 Continue, then a Content-Length answer with the
     * value, fed a byte at a time: each answer found where it begins. */
    struct h1ans *a = h1ans_new();
    h1ans_request(a, "HEAD", 4);
    h1ans_request(a, "POST", 4);
    char resp[600];
    int rl = snprintf(resp, sizeof(resp),
                      "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"
                      "HTTP/1.1 100 Continue\r\n\r\n"
                      "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s",
                      jl, json);
    for (int i = 0; i < rl; i++)
        h1ans_feed(a, sc, resp + i, 1, out);
    size_t gl;
    char *got = take(out, &gl);
    CHECK(gl == (size_t)rl && !has(got, gl, API_VALUE) && has(got, gl, API_STANDIN) &&
              h1ans_between(a) && !h1ans_raw(a),
          "HEAD's answer has no body, 1xx is not the answer, a Content-Length body is scrubbed "
          "to its end, its length true");
    free(got);
    h1ans_free(a);

    /* What cannot be framed: scrubbed as a stream from there on. */
    a = h1ans_new();
    const char *junk = "NOT HTTP " API_VALUE " more";
    h1ans_feed(a, sc, junk, strlen(junk), out);
    got = take(out, &gl);
    CHECK(h1ans_raw(a) && gl == strlen(junk) && !has(got, gl, API_VALUE),
          "a head that does not parse: the stream is scrubbed unframed");
    free(got);
    h1ans_free(a);
    a = h1ans_new();
    h1ans_request(a, "GET", 3);
    const char *eof = "HTTP/1.0 200 OK\r\n\r\nto the end " API_VALUE;
    h1ans_feed(a, sc, eof, strlen(eof), out);
    got = take(out, &gl);
    CHECK(h1ans_raw(a) && !has(got, gl, API_VALUE),
          "a body that runs to the connection's end: scrubbed unframed");
    free(got);
    h1ans_free(a);
    a = h1ans_new();
    h1ans_request(a, "GET", 3);
    const char *huge =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n";
    h1ans_feed(a, sc, huge, strlen(huge), out);
    CHECK(h1ans_raw(a), "a chunk size over 15 hex digits: unframed, no overflow");
    evbuffer_drain(out, evbuffer_get_length(out));
    h1ans_free(a);
    evbuffer_free(out);
    scrub_free(sc);
}

int main(void)
{
    struct cred_set *set = make_set();
    test_plain(set);
    test_encodings(set);
    test_h1_framing(set);
    CHECK(scrub_new(NULL, on_found, NULL) == NULL, "no set, no scrubber");
    cred_set_unref(set);
    return test_done();
}
