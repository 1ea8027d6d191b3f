/* Shared helpers of the libFuzzer harnesses in tests/fuzz/ (built only with FUZZ=1).
 *
 * A harness feeds bytes to one parser through its public API, exactly as the
 * component does with hostile input, and checks invariants the parser promises
 * beyond "no crash" (round trips, incremental = one-shot). A broken invariant
 * calls fuzz_fail(), which aborts so that libFuzzer saves the input. */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define fuzz_fail(...)                                                                             \
    do {                                                                                           \
        fprintf(stderr, "fuzz invariant broken at %s:%d: ", __FILE__, __LINE__);                   \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

#define fuzz_assert(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail(__VA_ARGS__);                                                                \
    } while (0)

/* For the loaders, which take a path: writes data to NAME inside a private directory
 * (made once per process under $TMPDIR or /tmp, removed at exit) and returns the
 * file's path, valid until the next call. */
const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size);

/* True when s (NUL-terminated) is exactly len bytes long, i.e. the message the parser
 * wrote is a proper string of the buffer's size at most. */
static inline int fuzz_is_cstring(const char *s, size_t bufsize)
{
    for (size_t i = 0; i < bufsize; i++)
        if (s[i] == '\0')
            return 1;
    return 0;
}

#endif
