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

/* The array in <data>/<name>, or a new empty one when there is none yet (or what is
 * there is not an array: a list the spoke keeps starts again). */
json_t *mcp_data_load_list(const struct mcp_server *s, const char *name, size_t max);
/* A booking: record (taken) kept at the end of the list in <data>/<name> (at most max
 * bytes) under the next id "PREFIX-NNNN" as its first field "booking_id", and the
 * tool's result: that id followed by answer's fields (taken), or the error "cannot
 * book: why" when the list cannot be saved. */
json_t *mcp_data_book(const struct mcp_server *s, const char *name, size_t max, const char *prefix,
                      json_t *record, json_t *answer);

/* Money and distances without libm: v rounded to cents, and |v|. */
static inline double mcp_round_cents(double v)
{
    return (double)(long long)(v * 100.0 + (v < 0 ? -0.5 : 0.5)) / 100.0;
}

static inline double mcp_abs(double v)
{
    return v < 0 ? -v : v;
}

#endif
