/* What a host program needs to run in a jail: the program itself, its interpreter (a
 * script's #! line, an ELF's PT_INTERP, the dynamic loader) and the shared libraries
 * it loads, found the way the loader finds them but by reading the files, never by
 * running them (not ldd, which runs the program's loader on it): each ELF's DT_NEEDED
 * names, looked up in its DT_RUNPATH (or DT_RPATH; $ORIGIN expanded), then in the
 * directories of /etc/ld.so.conf (and the files it includes) and the default ones, the
 * first file that is an ELF of the same class winning, recursively. Bounded: at most
 * ELFDEPS_MAX files, a #! chain of 4, headers read with explicit limits; a file that is
 * neither a script nor an ELF is refused. What a program opens at run time by other
 * means (dlopen of a plugin, git's helpers, data files) is not seen: bind it too. */
#ifndef NSJAIL_LITE_ELFDEPS_H
#define NSJAIL_LITE_ELFDEPS_H

#include "jail.h"

#include <stddef.h>

#define ELFDEPS_MAX 256

/* Appends to *paths (NULL-terminated, malloc'd, *n entries; no duplicates) the absolute
 * paths program needs, program first. 0, or -1 with err (125). */
int elfdeps_resolve(const char *program, char ***paths, size_t *n, struct jail_error *err);

#endif
