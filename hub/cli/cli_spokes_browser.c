#include "cli_spokes_browser.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Debian's chromium: /usr/bin/chromium is a shell launcher that reads /etc and /proc;
 * the program itself, and the resources it loads beside it (.pak, ICU data, V8
 * snapshots, the GL and Vulkan libraries it dlopens), are in /usr/lib/chromium. */
#define CHROMIUM_DIR "/usr/lib/chromium"
#define CHROMIUM_PROGRAM CHROMIUM_DIR "/chromium"

/* What chromium needs in a jail: no sandbox of its own (it cannot make namespaces here:
 * the jail is the sandbox), no zygote (a process that forks renderers from a template:
 * here each renderer is an ordinary child), /tmp rather than a small /dev/shm, and no
 * GPU process. The server's own flags follow. */
static const char launcher[] = "#!/bin/sh\n"
                               "# Written by hub spokes add --browser chromium.\n"
                               "exec " CHROMIUM_PROGRAM " --no-sandbox --no-zygote "
                               "--disable-dev-shm-usage --disable-gpu \"$@\"\n";

/* The launcher in <data_root>/.spoke-browser/chromium, written again when it differs. */
static char *write_launcher(const struct hub_config *cfg, char *err, size_t errlen)
{
    char *dir = xasprintf("%s/.spoke-browser", cfg->data_root);
    char *path = xasprintf("%s/chromium", dir);
    char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    int fd = -1;
    if (mkdir_parents(dir, 0755) < 0 && errno != EEXIST)
        goto fail;
    (void)unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0755);
    if (fd < 0 || write_all(fd, launcher, sizeof(launcher) - 1) < 0 || fchmod(fd, 0755) < 0 ||
        close(fd) < 0 || rename(tmp, path) < 0) {
        fd = -1;
        goto fail;
    }
    free(tmp);
    free(dir);
    return path;
fail:
    snprintf(err, errlen, "writing the browser's launcher %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    free(path);
    free(dir);
    return NULL;
}

int browser_profile(const char *name, const struct hub_config *cfg, struct browser_profile *bp,
                    char *err, size_t errlen)
{
    memset(bp, 0, sizeof(*bp));
    if (strcmp(name, "chromium") != 0) {
        snprintf(err, errlen, "--browser %s: the browser profile is chromium (Debian's)", name);
        return -1;
    }
    if (access(CHROMIUM_PROGRAM, X_OK) < 0) {
        snprintf(err, errlen,
                 "--browser chromium: %s is not there (install Debian's chromium: apt-get install "
                 "chromium)",
                 CHROMIUM_PROGRAM);
        return -1;
    }
    char *script = write_launcher(cfg, err, errlen);
    if (!script)
        return -1;
    bp->binds[0] = xasprintf("%s:%s", script, BROWSER_LAUNCHER);
    free(script);
    bp->binds[1] = xstrdup(CHROMIUM_DIR);
    bp->binds[2] = xstrdup("/usr/share/fonts");
    bp->binds[3] = xstrdup("/etc/fonts");
    /* The program with the libraries it loads, and the shell its launcher runs in. */
    bp->exec[0] = CHROMIUM_PROGRAM;
    bp->exec[1] = "/bin/sh";
    /* The names the servers look for it by (puppeteer, playwright, and by hand). */
    bp->env[0] = "CHROME_PATH=" BROWSER_LAUNCHER;
    bp->env[1] = "PUPPETEER_EXECUTABLE_PATH=" BROWSER_LAUNCHER;
    bp->env[2] = "CHROME_EXECUTABLE_PATH=" BROWSER_LAUNCHER;
    /* A browser is a few dozen processes and hundreds of threads, and a renderer of a
     * heavy page several hundred MB. */
    bp->memory_mb = 2048;
    bp->pids = 512;
    bp->nproc = 512;
    return 0;
}

void browser_profile_free(struct browser_profile *bp)
{
    for (size_t i = 0; i < sizeof(bp->binds) / sizeof(bp->binds[0]); i++)
        free(bp->binds[i]);
    memset(bp, 0, sizeof(*bp));
}
