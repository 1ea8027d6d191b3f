/* The secret store's and the CA's files are written whole or not at all: beside their
 * final name first (a new file, never one found there), synced, renamed over, and the
 * folder synced, so that a reader or a crash sees the old file or the new one. */
#ifndef HUB_SECRETS_FILEWRITE_H
#define HUB_SECRETS_FILEWRITE_H

#include <stddef.h>
#include <sys/types.h>

/* Writes a[0..al) then b[0..bl) (b may be NULL) to path with mode. 0, or -1 and err. */
int file_write_atomic(const char *path, const char *a, size_t al, const char *b, size_t bl,
                      mode_t mode, char *err, size_t errlen);

#endif
