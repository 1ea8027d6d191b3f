/* Diagnostics on stderr, in the style of OpenBSD's log.c: every line starts with the
 * program's name; fatal() and fatalx() end the process with the launcher status 125
 * unless log_set_fatal_status() chose another. */
#ifndef ISOLATE_LOG_H
#define ISOLATE_LOG_H

#include <stdarg.h>
#include <stdbool.h>

void log_init(const char *progname, bool debug);
void log_set_debug(bool debug);
bool log_debug_enabled(void);
void log_set_fatal_status(int status);
const char *log_progname(void);

void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* log_warn appends strerror(errno); log_warnx does not. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
