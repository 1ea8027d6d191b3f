/* A spoke's state as JSON files in its private data directory (mcp_data_dir()). */
#ifndef SPOKES_SDK_DATAFILE_H
#define SPOKES_SDK_DATAFILE_H

#include "mcp_server.h"

/* <data>/<name>, at most max bytes, parsed. NULL and a message in err otherwise. */
json_t *mcp_data_load(const struct mcp_server *s, const char *name, size_t max, char *err,
                      size_t errlen);
/* Writes <data>/<name> whole (a temporary file renamed over it). 0, or -1 and err. */
int mcp_data_save(const struct mcp_server *s, const char *name, const json_t *value, char *err,
                  size_t errlen);

#endif
