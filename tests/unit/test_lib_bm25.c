/* lib/bm25: how text becomes terms (split at case changes and punctuation, suffixes
 * stripped, stop words dropped), that the ranking prefers the field weighted higher and
 * the rarer term, and that hostile queries (huge, binary, empty) are answered within
 * bounds. */
#include "bm25.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static const char *terms(const char *text)
{
    static char buf[512];
    bm25_terms(text, buf, sizeof(buf));
    return buf;
}

int main(void)
{
    CHECK_STR(terms("get_file_contents"), "get fil content", "snake_case splits");
    CHECK_STR(terms("getFileContents"), "get fil content getfilecontent",
              "camelCase splits the same way, and keeps its whole");
    CHECK_STR(terms("GitHub github"), "git hub github github",
              "GitHub gives github too, as a query in lower case says it");
    CHECK_STR(terms("query-docs"), "query doc", "kebab-case too");
    CHECK_STR(terms("creates created creating create"), "creat creat creat creat",
              "create, creates, created, creating: one term");
    CHECK_STR(terms("repositories issues"), "repository issu", "plurals");
    CHECK_STR(terms("the list of my pull requests"), "list pull request", "stop words dropped");
    char long_word[200];
    memset(long_word, 'a', sizeof(long_word) - 1);
    long_word[sizeof(long_word) - 1] = '\0';
    CHECK(strlen(terms(long_word)) <= 48, "a 199-byte word becomes a term of at most 48 bytes");

    struct bm25 *ix = bm25_new();
    struct bm25_field a[] = {{"search_repositories", 3}, {"Search for GitHub repositories", 1}};
    struct bm25_field b[] = {{"search_code", 3}, {"Search for code across GitHub repositories", 1}};
    struct bm25_field c[] = {{"create_issue", 3}, {"Create a new issue in a GitHub repository", 1}};
    struct bm25_field d[] = {{"echo", 3}, {NULL, 1}};
    CHECK(bm25_add(ix, a, 2) == 0 && bm25_add(ix, b, 2) == 1 && bm25_add(ix, c, 2) == 2 &&
              bm25_add(ix, d, 2) == 3,
          "documents are numbered in order");
    size_t out[4];
    double score[4];
    size_t n = bm25_search(ix, "search code in repos", out, score, 4);
    CHECK(n >= 2 && out[0] == 1, "\"search code\" ranks search_code first (got %zu)", n ? out[0] : 9);
    n = bm25_search(ix, "open an issue", out, score, 4);
    CHECK(n == 1 && out[0] == 2, "\"open an issue\" finds create_issue only");
    n = bm25_search(ix, "repositories", out, score, 4);
    CHECK(n == 3 && out[0] == 0 && score[0] > score[1],
          "a term in the name (weight 3) outranks the same term in a description");
    n = bm25_search(ix, "github", out, score, 1);
    CHECK(n == 1, "k bounds the answer");
    CHECK(bm25_search(ix, "", out, score, 4) == 0, "an empty query finds nothing");
    CHECK(bm25_search(ix, "the of to", out, score, 4) == 0, "nor one of stop words only");
    size_t big = 1 << 20;
    char *q = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        q[i] = (char)(1 + (i * 7919) % 255);
    q[big] = '\0';
    n = bm25_search(ix, q, out, score, 4);
    CHECK(n <= 4, "a 1 MiB query of every byte value is answered within bounds (%zu)", n);
    free(q);
    bm25_free(ix);
    struct bm25 *empty = bm25_new();
    CHECK(bm25_search(empty, "anything", out, score, 4) == 0, "an empty index finds nothing");
    bm25_free(empty);
    return test_done();
}
