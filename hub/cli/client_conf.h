/* The MCP clients `hub client` configures (client_conf.c): where each keeps its servers
 * and how it spells one, and the edit of that file (merge one entry, remove one, list
 * them), backing up what it changes. */
#ifndef HUB_CLIENT_CONF_H
#define HUB_CLIENT_CONF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum client_format { CLIENT_JSON, CLIENT_TOML, CLIENT_YAML };

/* How a JSON client's entry differs from the common {command, args} shape. */
enum {
    CLIENT_CMD_ARRAY = 1, /* "command": [program, args...] (opencode) */
    CLIENT_ALL_TOOLS = 2, /* "tools": ["*"]: which of the server's tools it may use (Copilot) */
    CLIENT_ENABLED = 4,   /* "enabled": true (opencode) */
};

struct client_kind {
    const char *name;  /* as on the command line: "claude-code" */
    const char *title; /* "Claude Code" */
    const char *path;  /* below $HOME */
    enum client_format format;
    const char *container; /* the object (JSON) or table prefix (TOML) of its servers */
    /* How it spells a server: stdio's "type" value (NULL: no type key), the URL key of an
     * HTTP server (NULL: it takes none from its file) and that entry's "type" value. */
    const char *stdio_type;
    const char *url_key;
    const char *http_type;
    unsigned flags;
    /* Printed after add: how to see that the client reached the hub, and what the
     * client needs first (Gemini's trusted folders). */
    const char *verify;
};

extern const struct client_kind client_kinds[];
extern const size_t n_client_kinds;
const struct client_kind *client_kind_find(const char *name);

/* What the entry says: a command with its arguments, or a URL with a bearer token. */
struct client_entry {
    const char *command;
    const char *const *args; /* NULL-terminated */
    const char *url;
    const char *token; /* NULL: no Authorization header */
};

/* Sets servers[name] in the file (made, 0600, when missing); a file that changes is
 * first copied to *backup (a new string, NULL when there was no file). 0, or -1 with
 * err: the file is not one this editor can change safely (not plain JSON, its servers
 * not an object), or it cannot be written. */
int client_conf_add(const struct client_kind *k, const char *file, const char *name,
                    const struct client_entry *e, char **backup, char *err, size_t errlen);
/* Removes servers[name]: 1 removed, 0 it was not there (nothing written), -1 with err. */
int client_conf_remove(const struct client_kind *k, const char *file, const char *name,
                       char **backup, char *err, size_t errlen);
/* The servers the file names, as {"NAME": "what it runs", ...}; an empty object for a
 * missing file; NULL with err for one that cannot be read. */
json_t *client_conf_list(const struct client_kind *k, const char *file, char *err, size_t errlen);

#endif
