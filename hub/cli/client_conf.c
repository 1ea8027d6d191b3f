#include "client_conf.h"
#include "client_yaml.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A client's file is read whole; none is anywhere near this. */
#define CONF_MAX (8 * 1024 * 1024)

/* Where each client keeps its MCP servers (Linux, user scope) and how it names the
 * keys of one: Claude Code's `claude mcp add -s user`, Claude Desktop's config, VS
 * Code's user mcp.json, Cursor's global file (its editor and its CLI, cursor-agent,
 * read the same), Windsurf's, Gemini CLI's and Qwen Code's settings, Codex's
 * config.toml, opencode's global opencode.json, GitHub Copilot CLI's mcp-config.json
 * and Goose's config.yaml. */
const struct client_kind client_kinds[] = {
    {"claude-code", "Claude Code", ".claude.json", CLIENT_JSON, "mcpServers", "stdio", "url",
     "http", 0, "`claude mcp list` says Connected"},
    {"claude-desktop", "Claude Desktop", ".config/Claude/claude_desktop_config.json", CLIENT_JSON,
     "mcpServers", NULL, NULL, NULL, 0,
     "restart Claude Desktop; Settings, Developer lists the server as running"},
    {"vscode", "VS Code", ".config/Code/User/mcp.json", CLIENT_JSON, "servers", "stdio", "url",
     "http", 0, "the command MCP: List Servers shows it Running"},
    {"cursor", "Cursor", ".cursor/mcp.json", CLIENT_JSON, "mcpServers", NULL, "url", NULL, 0,
     "Cursor Settings, MCP, shows its tools (the CLI: `cursor-agent mcp list`)"},
    {"cursor-agent", "Cursor CLI (cursor-agent)", ".cursor/mcp.json", CLIENT_JSON, "mcpServers",
     NULL, "url", NULL, 0,
     "`cursor-agent mcp list` shows it ready, `cursor-agent mcp list-tools NAME` its tools"},
    {"gemini", "Gemini CLI", ".gemini/settings.json", CLIENT_JSON, "mcpServers", NULL, "httpUrl",
     NULL, 0,
     "`gemini mcp list` says Connected; in a folder Gemini CLI does not trust (folder trust "
     "on) it shows the server Disabled and starts it only once you trust the folder (its "
     "prompt, /permissions, or {\"DIR\": \"TRUST_FOLDER\"} in ~/.gemini/trustedFolders.json)"},
    {"qwen", "Qwen Code", ".qwen/settings.json", CLIENT_JSON, "mcpServers", NULL, "httpUrl", NULL,
     0,
     "`qwen mcp list` says Connected; in a folder it does not trust (folder trust on) the "
     "server is Disabled until you trust the folder (/permissions)"},
    {"windsurf", "Windsurf", ".codeium/windsurf/mcp_config.json", CLIENT_JSON, "mcpServers", NULL,
     "serverUrl", NULL, 0, "Windsurf's MCP panel (Cascade, the hammer icon) lists its tools"},
    {"codex", "Codex CLI", ".codex/config.toml", CLIENT_TOML, "mcp_servers", NULL, "url", NULL, 0,
     "Codex shows no connection check: `codex mcp list` shows the entry, and in a session "
     "/mcp lists the server with its tools once it started (a server that failed is named in "
     "~/.codex/log/codex-tui.log)"},
    {"opencode", "opencode", ".config/opencode/opencode.json", CLIENT_JSON, "mcp", "local", "url",
     "remote", CLIENT_CMD_ARRAY | CLIENT_ENABLED, "`opencode mcp list` says connected"},
    {"copilot", "GitHub Copilot CLI", ".copilot/mcp-config.json", CLIENT_JSON, "mcpServers",
     "local", "url", "http", CLIENT_ALL_TOOLS,
     "in `copilot`, /mcp show lists the server as connected, with its tools"},
    {"goose", "Goose", ".config/goose/config.yaml", CLIENT_YAML, "extensions", "stdio", "uri",
     "streamable_http", 0,
     "`goose session` loads it as an extension (one that fails to start is named there); "
     "`goose configure` lists it under Toggle Extensions"},
};
const size_t n_client_kinds = sizeof(client_kinds) / sizeof(client_kinds[0]);

const struct client_kind *client_kind_find(const char *name)
{
    for (size_t i = 0; i < n_client_kinds; i++)
        if (strcmp(client_kinds[i].name, name) == 0)
            return &client_kinds[i];
    return NULL;
}

/* ---- the file ---- */

/* The file's text (NUL-terminated) and its mode and owner; NULL with *missing for a file
 * that does not exist, NULL with err for one that cannot be read. */
static char *read_conf(const char *file, struct stat *st, bool *missing, char *err, size_t errlen)
{
    *missing = false;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        *missing = true;
        return NULL;
    }
    if (fd < 0 || fstat(fd, st) < 0) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st->st_mode) || st->st_size > CONF_MAX) {
        snprintf(err, errlen, "%s: not a regular file of at most 8 MiB", file);
        close(fd);
        return NULL;
    }
    char *buf = xmalloc((size_t)st->st_size + 1);
    ssize_t n = read_full(fd, buf, (size_t)st->st_size);
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* FILE.isolategpt-YYYYmmdd-HHMMSS.bak with the old text, same mode. */
static char *backup(const char *file, const char *text, mode_t mode, char *err, size_t errlen)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", gmtime_r(&now, &tm));
    char *path = xasprintf("%s.isolategpt-%s.bak", file, stamp);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0777);
    if (fd < 0 && errno == EEXIST) { /* twice in one second: the first copy is the older */
        return path;
    }
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
        snprintf(err, errlen, "backing %s up to %s: %s", file, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(path);
        return NULL;
    }
    close(fd);
    return path;
}

/* Replaces the file with text: a temporary file beside it, its mode and owner (0600 and
 * ours for a new file), then a rename, so that a client reading it never sees half. */
static int write_conf(const char *file, const char *text, const struct stat *old, char *err,
                      size_t errlen)
{
    char *copy = xstrdup(file);
    int rc = mkdir_p(dirname(copy), 0700);
    free(copy);
    char *tmp = xasprintf("%s.isolategpt-tmp", file);
    int fd = rc < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 && old) {
        if (fchmod(fd, old->st_mode & 07777) < 0 ||
            (geteuid() == 0 && fchown(fd, old->st_uid, old->st_gid) < 0))
            rc = -1;
    }
    if (fd < 0 || rc < 0 || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 ||
        rename(tmp, file) < 0) {
        snprintf(err, errlen, "writing %s: %s", file, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    close(fd);
    free(tmp);
    return 0;
}

/* ---- JSON clients ---- */

static json_t *json_entry(const struct client_kind *k, const struct client_entry *e)
{
    json_t *o = json_object();
    if (k->flags & CLIENT_ENABLED)
        json_object_set_new(o, "enabled", json_true());
    if (k->flags & CLIENT_ALL_TOOLS)
        json_object_set_new(o, "tools", json_pack("[s]", "*"));
    if (e->url) {
        if (k->http_type)
            json_object_set_new(o, "type", json_string(k->http_type));
        json_object_set_new(o, k->url_key, json_string(e->url));
        if (e->token)
            json_object_set_new(o, "headers",
                                json_pack("{s:s+}", "Authorization", "Bearer ", e->token));
        return o;
    }
    if (k->stdio_type)
        json_object_set_new(o, "type", json_string(k->stdio_type));
    json_t *args = json_array();
    for (const char *const *a = e->args; a && *a; a++)
        json_array_append_new(args, json_string(*a));
    if (k->flags & CLIENT_CMD_ARRAY) {
        json_array_insert_new(args, 0, json_string(e->command));
        json_object_set_new(o, "command", args);
    } else {
        json_object_set_new(o, "command", json_string(e->command));
        json_object_set_new(o, "args", args);
    }
    return o;
}

/* The file's root object and its servers object (made when absent); NULL with err for a
 * file that is not plain JSON or whose servers are not an object. */
static json_t *json_root(const struct client_kind *k, const char *file, const char *text,
                         json_t **servers, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = text && *text ? json_loads(text, 0, &je) : json_object();
    if (!json_is_object(root)) {
        snprintf(err, errlen,
                 "%s is not plain JSON (%s): not changed; comments or trailing commas are "
                 "for you to edit by hand",
                 file, root ? "not an object" : je.text);
        json_decref(root);
        return NULL;
    }
    *servers = json_object_get(root, k->container);
    if (!*servers)
        json_object_set_new(root, k->container, *servers = json_object());
    if (!json_is_object(*servers)) {
        snprintf(err, errlen, "%s: \"%s\" is not an object: not changed", file, k->container);
        json_decref(root);
        return NULL;
    }
    return root;
}

static char *json_text(json_t *root)
{
    char *t = json_dumps(root, JSON_INDENT(2));
    char *with_nl = xasprintf("%s\n", t ? t : "{}");
    free(t);
    return with_nl;
}

/* text with the server name set to e, or (e NULL) removed, *found saying whether it was
 * there; NULL with err as json_root's. */
static char *json_edit(const struct client_kind *k, const char *file, const char *text,
                       const char *name, const struct client_entry *e, bool *found, char *err,
                       size_t errlen)
{
    json_t *servers;
    json_t *root = json_root(k, file, text, &servers, err, errlen);
    if (!root)
        return NULL;
    if (e)
        json_object_set_new(servers, name, json_entry(k, e));
    else
        *found = json_object_del(servers, name) == 0;
    char *out = json_text(root);
    json_decref(root);
    return out;
}

/* ---- TOML (Codex): our table only, line by line ---- */

static void toml_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Whether line is the header of the table of server name or one of its subtables:
 * [mcp_servers.NAME], [mcp_servers."NAME"], [mcp_servers.NAME.env], ... */
static bool toml_is_ours(const struct client_kind *k, const char *line, const char *name)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line != '[' || line[1] == '[')
        return false;
    char want[256], quoted[256];
    snprintf(want, sizeof(want), "[%s.%s", k->container, name);
    snprintf(quoted, sizeof(quoted), "[%s.\"%s\"", k->container, name);
    for (int i = 0; i < 2; i++) {
        const char *w = i ? quoted : want;
        size_t n = strlen(w);
        if (strncmp(line, w, n) == 0 && (line[n] == ']' || line[n] == '.'))
            return true;
    }
    return false;
}

static bool toml_is_header(const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    return *line == '[';
}

/* text without the server's tables; *found says whether it had any. */
static char *toml_without(const struct client_kind *k, const char *text, const char *name,
                          bool *found)
{
    size_t len = strlen(text);
    char *out = xmalloc(len + 2);
    size_t o = 0;
    bool skipping = false;
    *found = false;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (toml_is_header(line))
            skipping = toml_is_ours(k, line, name);
        if (skipping)
            *found = true;
        else {
            memcpy(out + o, line, n);
            o += n;
        }
        line += n;
    }
    out[o] = '\0';
    return out;
}

static char *toml_with(const struct client_kind *k, const char *rest, const char *name,
                       const struct client_entry *e)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs(rest, f);
    if (rest[0] && rest[strlen(rest) - 1] != '\n')
        fputc('\n', f);
    if (rest[0])
        fputc('\n', f);
    fprintf(f, "[%s.%s]\n", k->container, name);
    if (e->url) {
        fputs("url = ", f);
        toml_string(f, e->url);
        fputc('\n', f);
        if (e->token) {
            char *bearer = xasprintf("Bearer %s", e->token);
            fputs("http_headers = { \"Authorization\" = ", f);
            toml_string(f, bearer);
            fputs(" }\n", f);
            free(bearer);
        }
    } else {
        fputs("command = ", f);
        toml_string(f, e->command);
        fputs("\nargs = [", f);
        for (const char *const *a = e->args; a && *a; a++) {
            if (a != e->args)
                fputs(", ", f);
            toml_string(f, *a);
        }
        fputs("]\n", f);
    }
    fclose(f);
    return buf;
}

/* ---- the operations ---- */

int client_conf_add(const struct client_kind *k, const char *file, const char *name,
                    const struct client_entry *e, char **bak, char *err, size_t errlen)
{
    *bak = NULL;
    struct stat st;
    bool missing;
    char *text = read_conf(file, &st, &missing, err, errlen);
    if (!text && !missing)
        return -1;
    char *out = NULL;
    if (k->format == CLIENT_TOML) {
        bool found;
        char *rest = toml_without(k, text ? text : "", name, &found);
        out = toml_with(k, rest, name, e);
        free(rest);
    } else if (k->format == CLIENT_YAML) {
        if (!(out = yaml_edit(k, file, text, name, e, NULL, err, errlen))) {
            free(text);
            return -1;
        }
    } else if (!(out = json_edit(k, file, text, name, e, NULL, err, errlen))) {
        free(text);
        return -1;
    }
    int rc = 0;
    if (text && strcmp(text, out) != 0 && !(*bak = backup(file, text, st.st_mode, err, errlen)))
        rc = -1;
    if (rc == 0 && (!text || strcmp(text, out) != 0))
        rc = write_conf(file, out, text ? &st : NULL, err, errlen);
    free(out);
    free(text);
    return rc;
}

int client_conf_remove(const struct client_kind *k, const char *file, const char *name, char **bak,
                       char *err, size_t errlen)
{
    *bak = NULL;
    struct stat st;
    bool missing;
    char *text = read_conf(file, &st, &missing, err, errlen);
    if (!text)
        return missing ? 0 : -1;
    char *out = NULL;
    bool found = false;
    if (k->format == CLIENT_TOML) {
        out = toml_without(k, text, name, &found);
    } else if (k->format == CLIENT_YAML) {
        if (!(out = yaml_edit(k, file, text, name, NULL, &found, err, errlen))) {
            free(text);
            return -1;
        }
    } else if (!(out = json_edit(k, file, text, name, NULL, &found, err, errlen))) {
        free(text);
        return -1;
    }
    int rc = found ? 1 : 0;
    if (found && !(*bak = backup(file, text, st.st_mode, err, errlen)))
        rc = -1;
    if (rc == 1 && write_conf(file, out, &st, err, errlen) < 0)
        rc = -1;
    free(out);
    free(text);
    return rc;
}

/* "NAME" of a TOML table header of ours ([mcp_servers.NAME]), else NULL. */
static char *toml_server_name(const struct client_kind *k, const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    size_t n = strlen(k->container);
    if (line[0] != '[' || strncmp(line + 1, k->container, n) != 0 || line[1 + n] != '.')
        return NULL;
    const char *s = line + 2 + n;
    bool q = *s == '"';
    s += q;
    size_t len = strcspn(s, q ? "\"" : ".]");
    if (len == 0 || len > 128 || (!q && s[len] == '.'))
        return NULL; /* a subtable ([mcp_servers.NAME.env]) adds no server */
    return xasprintf("%.*s", (int)len, s);
}

json_t *client_conf_list(const struct client_kind *k, const char *file, char *err, size_t errlen)
{
    struct stat st;
    bool missing;
    char *text = read_conf(file, &st, &missing, err, errlen);
    if (!text)
        return missing ? json_object() : NULL;
    json_t *out = json_object();
    if (k->format == CLIENT_TOML) {
        for (const char *line = text; *line;) {
            char *name = toml_server_name(k, line);
            if (name)
                json_object_set_new(out, name, json_string("(see the file)"));
            free(name);
            const char *nl = strchr(line, '\n');
            line = nl ? nl + 1 : line + strlen(line);
        }
        free(text);
        return out;
    }
    if (k->format == CLIENT_YAML) {
        json_decref(out);
        out = yaml_list(k, file, text, err, errlen);
        free(text);
        return out;
    }
    json_t *servers;
    json_t *root = json_root(k, file, text, &servers, err, errlen);
    free(text);
    if (!root) {
        json_decref(out);
        return NULL;
    }
    const char *name;
    json_t *v;
    json_object_foreach(servers, name, v)
    {
        const char *url = k->url_key ? json_string_value(json_object_get(v, k->url_key)) : NULL;
        json_t *command = json_object_get(v, "command");
        const char *cmd = json_string_value(command);
        json_t *args = json_object_get(v, "args");
        if (json_is_array(command)) { /* opencode: [program, args...] */
            cmd = json_string_value(json_array_get(command, 0));
            args = json_array_size(command) > 1 ? command : NULL;
        }
        char what[600];
        if (url)
            snprintf(what, sizeof(what), "%s", url);
        else {
            int n = snprintf(what, sizeof(what), "%s", cmd ? cmd : "?");
            size_t i;
            json_t *a;
            json_array_foreach(args, i, a)
            {
                if (args == command && i == 0)
                    continue;
                if (n > 0 && (size_t)n < sizeof(what))
                    n += snprintf(what + n, sizeof(what) - (size_t)n, " %s",
                                  json_is_string(a) ? json_string_value(a) : "?");
            }
        }
        json_object_set_new(out, name, json_string(what));
    }
    json_decref(root);
    return out;
}
