/* Assertions for C unit tests: each prints "ok - ..." or "not ok - ..." for tests/run.
 * Return test_done() from main. */
#ifndef ISOLATE_TEST_H
#define ISOLATE_TEST_H

#include <stdio.h>
#include <string.h>

static int test_failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (cond) {                                                                            \
            printf("ok - ");                                                                   \
        } else {                                                                               \
            printf("not ok - %s:%d: (%s) ", __FILE__, __LINE__, #cond);                        \
            test_failures++;                                                                   \
        }                                                                                      \
        printf(__VA_ARGS__);                                                                   \
        printf("\n");                                                                          \
        fflush(stdout);                                                                        \
    } while (0)

#define CHECK_STR(got, want, ...)                                                              \
    do {                                                                                       \
        const char *g_ = (got), *w_ = (want);                                                  \
        int same_ = g_ && w_ && strcmp(g_, w_) == 0;                                           \
        CHECK(same_, __VA_ARGS__);                                                             \
        if (!same_)                                                                            \
            printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)");       \
    } while (0)

static inline int test_done(void)
{
    return test_failures ? 1 : 0;
}

#endif
