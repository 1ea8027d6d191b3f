/* nsjail-lite profiles (nsjail-lite/profile.c): loaded through the public API from a
 * real file, over the built-in defaults, as `nsjail-lite --profile` and the hub do;
 * the same bytes also as a seccomp policy file (`--seccomp FILE`). When a profile
 * loads, its seccomp program is compiled and exported, as the launcher does before
 * any fork, so that the syscall names a profile adds reach libseccomp.
 *
 * Invariants beyond "no crash": a failed load says why and names the file; the
 * configuration stays freeable either way (no half-replaced lists). */
#include "nsjail-lite/jail.h"
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int devnull = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0)
        fuzz_fail("/dev/null");
    return 0;
}

static void check_error(int rc, const char *err, const char *path)
{
    if (rc == 0)
        return;
    fuzz_assert(rc == -1, "rc %d", rc);
    fuzz_assert(err[0] != '\0', "refused without a message");
    fuzz_assert(strncmp(err, path, strlen(path)) == 0, "message does not name the file: %s", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("profile.json", data, size);
    char err[512];

    struct jail_config cfg;
    jail_config_init(&cfg);
    err[0] = '\0';
    int rc = jail_config_load_profile(&cfg, path, err, sizeof(err));
    check_error(rc, err, path);
    if (rc == 0) {
        struct jail_error jerr;
        memset(&jerr, 0, sizeof(jerr));
        if (jail_seccomp_export(&cfg, devnull, &jerr) < 0)
            fuzz_assert(jerr.message[0] != '\0', "seccomp export failed without a message");
    }
    jail_config_free(&cfg);

    jail_config_init(&cfg);
    err[0] = '\0';
    rc = jail_config_load_seccomp(&cfg, path, err, sizeof(err));
    check_error(rc, err, path);
    jail_config_free(&cfg);
    return 0;
}
