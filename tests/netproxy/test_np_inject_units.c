/* netproxy's injection without sockets: the bindings (creds.c), the decision and
 * rewriting of a request (inject.c) and the HTTP/1.1 request stream (h1rewrite.c), fed
 * whole and byte by byte, against the attacks a tool holding a stand-in would try:
 * another host, another header, Basic, the query, the body, a chunk boundary through
 * the stand-in, smuggling (CL+TE, two lengths, folding, bare LF), oversize heads. */
#include "netproxy/intercept/intercept.h"
#include "tests/unit/test.h"
#include "util.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#define API_STANDIN "ghp_STANDINstandin0123456789abcdef"
#define API_VALUE "ghp_REALrealreal0123456789abcdefgh"
#define FILES_STANDIN "fk_STANDIN0123456789012345"
#define FILES_VALUE "fk_REAL/val+ue0123456789012"

static struct cred_set *make_set(void)
{
    const char *text =
        "[{\"name\":\"api\",\"standin\":\"" API_STANDIN "\",\"value\":\"" API_VALUE "\","
        "\"hosts\":[\"api.example.com\"],\"header\":\"Authorization\"},"
        "{\"name\":\"files\",\"standin\":\"" FILES_STANDIN "\",\"value\":\"" FILES_VALUE "\","
        "\"hosts\":[\"*.files.example\"],\"query\":\"key\"}]";
    json_t *arr = json_loads(text, 0, NULL);
    char err[300];
    struct cred_set *s = cred_set_parse(arr, err, sizeof(err));
    CHECK(s && s->n == 2, "two bindings parse (%s)", s ? "" : err);
    json_t *v = json_object_get(json_array_get(arr, 0), "value");
    CHECK(memchr(json_string_value(v), 'R', json_string_length(v)) == NULL,
          "the message's copy of a value is wiped once parsed");
    json_decref(arr);
    return s;
}

static void test_creds(void)
{
    static const char *const bad[] = {
        "{\"name\":\"x\",\"standin\":\"short\",\"value\":\"v\",\"hosts\":[\"a.example\"]}",
        "{\"name\":\"x\",\"standin\":\"0123456789abcdefgh\",\"value\":\"line\\r\\nX: y\","
        "\"hosts\":[\"a.example\"]}",
        "{\"name\":\"x\",\"standin\":\"0123456789abcdefgh\",\"value\":\"v\",\"hosts\":[\"A.example\"]}",
        "{\"name\":\"x\",\"standin\":\"0123456789abcdefgh\",\"value\":\"v\",\"hosts\":[]}",
        "{\"name\":\"../x\",\"standin\":\"0123456789abcdefgh\",\"value\":\"v\",\"hosts\":[\"a.b\"]}",
        "{\"name\":\"x\",\"standin\":\"0123456789abcdefgh\",\"value\":\"v\",\"hosts\":[\"a.b\"],"
        "\"extra\":1}",
    };
    const char *why[] = {"a short stand-in", "a value with CR LF (header injection)",
                         "an upper-case host", "no host", "a name with a path", "an unknown key"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        json_t *o = json_loads(bad[i], 0, NULL);
        struct cred c;
        char err[300];
        CHECK(o && !cred_parse(o, &c, err, sizeof(err)), "refused: %s (%s)", why[i], err);
        json_decref(o);
    }
}

/* inject_request over a request made of a target, an authority and fields. */
static enum reason run(const struct cred_set *s, const char *host, bool tls, const char *target,
                       const char *authority, const char *const *fields, size_t nf,
                       struct inject_result *res)
{
    struct inject_field f[16];
    for (size_t i = 0; i < nf; i++) {
        const char *colon = strchr(fields[i], ':');
        f[i] = (struct inject_field){fields[i], colon + 2, (size_t)(colon - fields[i]),
                                     strlen(colon + 2)};
    }
    struct inject_dest d = {.host = host, .port = 443, .tls = tls};
    struct inject_req rq = {"GET", target, authority, 3, strlen(target),
                            authority ? strlen(authority) : 0, f, nf};
    inject_request(s, &d, &rq, res);
    return res->verdict;
}

static void test_inject(void)
{
    struct cred_set *s = make_set();
    struct inject_result r;
    const char *auth[] = {"Authorization: Bearer " API_STANDIN};
    CHECK(run(s, "api.example.com", true, "/user", "api.example.com", auth, 1, &r) == R_ALLOWED &&
              r.values[0] && strcmp(r.values[0], "Bearer " API_VALUE) == 0 && r.n_injected == 1 &&
              strcmp(r.injected[0]->name, "api") == 0,
          "the stand-in in its header to its host becomes the value");
    inject_result_free(&r);
    CHECK(run(s, "api.example.com", true, "/user", "api.example.com:443", auth, 1, &r) ==
              R_ALLOWED,
          "an authority with the tunnel's port is the same host");
    inject_result_free(&r);
    const char *other_header[] = {"X-Api-Key: " API_STANDIN};
    CHECK(run(s, "api.example.com", true, "/user", "api.example.com", other_header, 1, &r) ==
                  R_ALLOWED &&
              !r.values[0] && r.n_injected == 0,
          "in another header than the binding names it passes unchanged");
    inject_result_free(&r);
    CHECK(run(s, "evil.files.example", true, "/", "evil.files.example", auth, 1, &r) ==
                  R_CRED_WRONG_HOST &&
              r.wrong && strcmp(r.wrong->name, "api") == 0,
          "to another secret's host it is refused as credential-to-wrong-host, naming it");
    inject_result_free(&r);
    char basic[300];
    unsigned char b64[200];
    EVP_EncodeBlock(b64, (const unsigned char *)"x:" API_STANDIN, (int)strlen("x:" API_STANDIN));
    snprintf(basic, sizeof(basic), "Authorization: Basic %s", b64);
    const char *basic_f[] = {basic};
    CHECK(run(s, "a.files.example", true, "/", "a.files.example", basic_f, 1, &r) ==
              R_CRED_WRONG_HOST,
          "... also inside a Basic credential");
    inject_result_free(&r);
    CHECK(run(s, "api.example.com", true, "/", "api.example.com", basic_f, 1, &r) == R_ALLOWED &&
              r.values[0] && strncmp(r.values[0], "Basic ", 6) == 0,
          "to its own host a Basic credential is decoded, injected and encoded again");
    if (r.values[0]) {
        unsigned char dec[200];
        int n = EVP_DecodeBlock(dec, (const unsigned char *)r.values[0] + 6,
                                (int)strlen(r.values[0] + 6));
        CHECK(n > 0 && memcmp(dec, "x:" API_VALUE, strlen("x:" API_VALUE)) == 0,
              "... to user:value");
    }
    inject_result_free(&r);
    CHECK(run(s, "api.example.com", true, "/u?x=" FILES_STANDIN, "api.example.com", NULL, 0, &r) ==
              R_CRED_WRONG_HOST,
          "a stand-in in the URL to a host it is not for is refused");
    inject_result_free(&r);
    CHECK(run(s, "a.files.example", true, "/get?a=1&key=" FILES_STANDIN "&b=2", "a.files.example",
              NULL, 0, &r) == R_ALLOWED &&
              r.target && strcmp(r.target, "/get?a=1&key=fk_REAL%2Fval%2Bue0123456789012&b=2") == 0,
          "the named query parameter gets the value, percent-encoded (%s)", r.target ? r.target : "");
    inject_result_free(&r);
    CHECK(run(s, "a.files.example", true, "/get?other=" FILES_STANDIN, "a.files.example", NULL, 0,
              &r) == R_ALLOWED &&
              !r.target,
          "... another parameter keeps the stand-in");
    inject_result_free(&r);
    CHECK(run(s, "files.example", true, "/", "files.example", NULL, 0, &r) == R_ALLOWED,
          "*.files.example is not files.example itself");
    CHECK(!cred_set_for_host(s, "files.example") && cred_set_for_host(s, "x.y.files.example"),
          "... but any name under it");
    inject_result_free(&r);
    CHECK(run(s, "api.example.com", true, "/", "evil.example", auth, 1, &r) == R_HOST_MISMATCH,
          "a request naming another host than the tunnel's is refused (421)");
    inject_result_free(&r);
    CHECK(run(s, "api.example.com", true, "https://evil.example/x", "api.example.com", auth, 1,
              &r) == R_HOST_MISMATCH,
          "... also in an absolute target");
    inject_result_free(&r);
    CHECK(run(s, "api.example.com", true, "/", "api.example.com.evil.example", auth, 1, &r) ==
              R_HOST_MISMATCH,
          "... and a name that only begins like it");
    inject_result_free(&r);
    CHECK(run(s, "api.example.com", false, "/", "api.example.com", auth, 1, &r) == R_ALLOWED &&
              !r.values[0] && r.n_injected == 0,
          "in clear nothing is injected (the value would cross the network in clear)");
    inject_result_free(&r);
    CHECK(run(s, "a.files.example", false, "/", "a.files.example", auth, 1, &r) ==
              R_CRED_WRONG_HOST,
          "... but a stand-in sent astray in clear is refused all the same");
    inject_result_free(&r);
    const char *plain[] = {"Authorization: Bearer something-else"};
    CHECK(run(s, "api.example.com", true, "/", "api.example.com", plain, 1, &r) == R_ALLOWED &&
              !r.values[0],
          "a request without a stand-in passes unchanged");
    inject_result_free(&r);

    /* A body cut through the stand-in. */
    const char *body = "data=" API_STANDIN "&more";
    size_t bl = strlen(body);
    bool all = true;
    for (size_t cut = 1; cut < bl; cut++) {
        struct scan_carry sc = {0};
        const struct cred *a = inject_scan_stream(&sc, s, "a.files.example", body, cut);
        const struct cred *b = inject_scan_stream(&sc, s, "a.files.example", body + cut, bl - cut);
        all &= (a || b) && (a ? a : b) == &s->v[0];
        scan_carry_free(&sc);
    }
    CHECK(all, "a stand-in cut across body chunks at every byte is still found");
    struct scan_carry sc = {0};
    CHECK(!inject_scan_stream(&sc, s, "api.example.com", body, bl),
          "... and to its own host the body is not refused");
    scan_carry_free(&sc);
    cred_set_unref(s);
}

/* ---- HTTP/1.1 ---- */

struct out {
    char buf[256 * 1024];
    size_t len;
    size_t heads, body_bytes;
    struct cred_set *s;
};

static int out_fn(void *ud, const char *b, size_t n)
{
    struct out *o = ud;
    if (o->len + n > sizeof(o->buf))
        return -1;
    memcpy(o->buf + o->len, b, n);
    o->len += n;
    return 0;
}

static void head_fn(void *ud, const struct inject_req *rq, struct inject_result *res)
{
    struct out *o = ud;
    o->heads++;
    struct inject_dest d = {.host = "api.example.com", .port = 443, .tls = true};
    inject_request(o->s, &d, rq, res);
}

static struct scan_carry body_carry;

static enum reason body_fn(void *ud, const char *b, size_t n, char *detail, size_t dlen)
{
    struct out *o = ud;
    o->body_bytes += n;
    const struct cred *w = inject_scan_stream(&body_carry, o->s, "api.example.com", b, n);
    if (w)
        snprintf(detail, dlen, "wrong host %s", w->name);
    return w ? R_CRED_WRONG_HOST : R_ALLOWED;
}

/* Feeds text whole (step 0) or step bytes at a time; the status at the end. */
static enum h1_status feed(struct out *o, const char *text, size_t step, enum reason *why)
{
    struct h1rw_ops ops = {.out = out_fn, .head = head_fn, .body = body_fn, .ud = o};
    struct h1rw *r = h1rw_new(&ops);
    o->len = o->heads = o->body_bytes = 0;
    scan_carry_free(&body_carry);
    size_t n = strlen(text);
    enum h1_status st = H1_OK;
    for (size_t i = 0; i < n && st == H1_OK;) {
        size_t k = step ? (n - i < step ? n - i : step) : n;
        st = h1rw_feed(r, text + i, k);
        i += k;
    }
    const char *detail;
    int status;
    *why = st == H1_OK ? R_ALLOWED : h1rw_refusal(r, &detail, &status);
    h1rw_free(r);
    return st;
}

static void test_h1(void)
{
    struct out *o = xcalloc(1, sizeof(*o));
    o->s = make_set();
    enum reason why;
    const char *two = "GET /a HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer " API_STANDIN
                      "\r\n\r\nPOST /b HTTP/1.1\r\nhost: api.example.com\r\nContent-Length: 5\r\n"
                      "Authorization: Bearer " API_STANDIN "\r\n\r\nhello";
    const char *want = "GET /a HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer " API_VALUE
                       "\r\n\r\nPOST /b HTTP/1.1\r\nhost: api.example.com\r\nContent-Length: 5\r\n"
                       "Authorization: Bearer " API_VALUE "\r\n\r\nhello";
    CHECK(feed(o, two, 0, &why) == H1_OK && o->heads == 2 && o->len == strlen(want) &&
              memcmp(o->buf, want, o->len) == 0,
          "two pipelined requests: each rewritten, the body passed on, nothing else changed");
    bool same = true;
    for (size_t step = 1; step < 40; step += 3)
        same &= feed(o, two, step, &why) == H1_OK && o->len == strlen(want) &&
                memcmp(o->buf, want, o->len) == 0;
    CHECK(same, "... the same bytes fed in pieces of 1 to 40");
    const char *chunked = "POST /c HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n"
                          "\r\n5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n"
                          "GET /d HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
    CHECK(feed(o, chunked, 7, &why) == H1_OK && o->heads == 2 && o->body_bytes > 8 &&
              o->len == strlen(chunked) && memcmp(o->buf, chunked, o->len) == 0,
          "a chunked body with an extension and a trailer passes unchanged, then the next "
          "request");
    char wrong[512];
    snprintf(wrong, sizeof(wrong),
             "POST /up HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
             "8\r\nkey=%.4s\r\n%zx\r\n%s\r\n0\r\n\r\n",
             FILES_STANDIN, strlen(FILES_STANDIN) - 4, FILES_STANDIN + 4);
    CHECK(feed(o, wrong, 5, &why) == H1_REFUSED && why == R_CRED_WRONG_HOST,
          "another secret's stand-in cut across two chunks of a body is refused");
    CHECK(!memmem(o->buf, o->len, FILES_STANDIN + 4, strlen(FILES_STANDIN) - 4),
          "... before its rest went on");

    static const struct {
        const char *text, *what;
        enum reason why;
    } bad[] = {
        {"POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 3\r\nTransfer-Encoding: "
         "chunked\r\n\r\n",
         "Content-Length with Transfer-Encoding (smuggling)", R_BAD_REQUEST},
        {"POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
         "two different Content-Lengths", R_BAD_REQUEST},
        {"POST / HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
         "a transfer coding other than chunked", R_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: api.example.com\r\nX-A: 1\r\n  folded\r\n\r\n",
         "obsolete line folding", R_BAD_REQUEST},
        {"GET / HTTP/1.1\nHost: api.example.com\r\n\r\n", "a bare LF", R_BAD_REQUEST},
        {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 without Host", R_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: api.example.com\r\nHost: evil.example\r\n\r\n", "two Hosts",
         R_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost : api.example.com\r\n\r\n", "space before the colon",
         R_BAD_REQUEST},
        {"GET / HTTP/2.0\r\nHost: api.example.com\r\n\r\n", "another HTTP version", R_BAD_REQUEST},
        {"POST / HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: +3\r\n\r\n",
         "a signed Content-Length", R_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "another Host", R_HOST_MISMATCH},
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        CHECK(feed(o, bad[i].text, 0, &why) != H1_OK && why == bad[i].why && o->len == 0,
              "refused before anything went on: %s", bad[i].what);
    const char *nothex = "POST / HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n"
                         "\r\nzz\r\nGET /hidden HTTP/1.1\r\n";
    CHECK(feed(o, nothex, 0, &why) == H1_ERROR && why == R_BAD_REQUEST && o->heads == 1 &&
              !memmem(o->buf, o->len, "/hidden", 7),
          "a chunk size that is not hex ends the stream: nothing after it goes on");
    char *big = xmalloc(H1_MAX_HEAD + 200);
    strcpy(big, "GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Big: ");
    size_t bl = strlen(big);
    memset(big + bl, 'a', H1_MAX_HEAD);
    strcpy(big + bl + H1_MAX_HEAD, "\r\n\r\n");
    CHECK(feed(o, big, 4096, &why) != H1_OK && why == R_HEADERS_TOO_LARGE,
          "a head over 64 KiB is refused (431) without waiting for its end");
    free(big);
    const char *up = "GET /ws HTTP/1.1\r\nHost: api.example.com\r\nUpgrade: websocket\r\nConnection: "
                     "Upgrade\r\n\r\nNOT HTTP AT ALL " FILES_STANDIN;
    CHECK(feed(o, up, 0, &why) == H1_REFUSED && why == R_CRED_WRONG_HOST && o->heads == 1,
          "after an Upgrade the stream is opaque but still scanned");
    cred_set_unref(o->s);
    scan_carry_free(&body_carry);
    free(o);
}

int main(void)
{
    test_creds();
    test_inject();
    test_h1();
    return test_done();
}
