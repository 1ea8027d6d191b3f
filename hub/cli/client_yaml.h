/* Goose's config.yaml, edited line by line (client_yaml.c): one entry of its
 * "extensions" block mapping replaced, removed or listed, every other line kept as it
 * was. No YAML library: what is not a plain block mapping there is left alone. */
#ifndef HUB_CLIENT_YAML_H
#define HUB_CLIENT_YAML_H

#include "client_conf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* text with servers[name] set to e (e NULL: removed, *found saying whether it was
 * there); NULL with err for a file whose container is not a block mapping. */
char *yaml_edit(const struct client_kind *k, const char *file, const char *text, const char *name,
                const struct client_entry *e, bool *found, char *err, size_t errlen);
/* {"NAME": "(see the file)", ...}; NULL with err as yaml_edit's. */
json_t *yaml_list(const struct client_kind *k, const char *file, const char *text, char *err,
                  size_t errlen);

#endif
