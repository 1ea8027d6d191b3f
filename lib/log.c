#include "log.h"
#include "termtext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *log_name = "isolategpt";
static bool log_debug_on;
static int log_fatal_status = 125;

void log_init(const char *progname, bool debug)
{
    const char *slash = strrchr(progname, '/');
    log_name = slash ? slash + 1 : progname;
    log_debug_on = debug;
}

void log_set_debug(bool debug)
{
    log_debug_on = debug;
}

bool log_debug_enabled(void)
{
    return log_debug_on;
}

void log_set_fatal_status(int status)
{
    log_fatal_status = status;
}

const char *log_progname(void)
{
    return log_name;
}

/* One write(2) per line so that lines from several processes sharing stderr do not
 * interleave mid-line. The message goes through the terminal neutraliser
 * (termtext.h): log lines carry what spokes, LLMs and peers said (an error a spoke
 * returned, a tool name, a protocol version), and none of it may clear the screen, set
 * the title or the clipboard, or start a line of its own that passes for the hub's
 * (only the "PROG: " prefix starts a line). */
static void log_emit(const char *level, const char *fmt, va_list ap, const char *suffix)
    __attribute__((format(printf, 2, 0)));
static void log_emit(const char *level, const char *fmt, va_list ap, const char *suffix)
{
    char msg[1536];
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t mlen = m < 0 ? 0 : (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
    msg[mlen] = '\0';
    char line[2048];
    int n = snprintf(line, sizeof(line), "%s: %s", log_name, level);
    if (n < 0 || (size_t)n >= sizeof(line))
        n = 0;
    size_t len = (size_t)n;
    len += tt_inline_buf(line + len, sizeof(line) - 64 - len, msg, mlen);
    if (suffix) {
        int k = snprintf(line + len, sizeof(line) - len, ": %s", suffix);
        if (k > 0)
            len += (size_t)k < sizeof(line) - len ? (size_t)k : sizeof(line) - len - 1;
    }
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void log_debug(const char *fmt, ...)
{
    if (!log_debug_on)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit("debug: ", fmt, ap, NULL);
    va_end(ap);
}

void log_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_emit("", fmt, ap, NULL);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    log_emit("", fmt, ap, strerror(saved));
    va_end(ap);
    errno = saved;
}

void log_warnx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_emit("", fmt, ap, NULL);
    va_end(ap);
}

void fatal(const char *fmt, ...)
{
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    log_emit("error: ", fmt, ap, strerror(saved));
    va_end(ap);
    exit(log_fatal_status);
}

void fatalx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_emit("error: ", fmt, ap, NULL);
    va_end(ap);
    exit(log_fatal_status);
}
