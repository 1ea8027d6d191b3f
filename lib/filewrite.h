/* Files written whole or not at all (the secret store's, the CA's, the held node's
 * loader): beside their final name first (a new file, never one found there), synced,
 * renamed over, and the folder synced, so that a reader or a crash sees the old file or
 * the new one. */
#ifndef LIB_FILEWRITE_H
#define LIB_FILEWRITE_H

#include <stddef.h>
#include <sys/types.h>

/* Writes a[0..al) then b[0..bl) (b may be NULL) to path with mode. 0, or -1 and err. */
int file_write_atomic(const char *path, const char *a, size_t al, const char *b, size_t bl,
                      mode_t mode, char *err, size_t errlen);

#endif
