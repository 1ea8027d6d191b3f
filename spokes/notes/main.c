/* notes: a spoke with no network that keeps the user's short notes in its private
 * data directory, and can clip a web page through another app (fetch.get) by asking
 * the hub: it never talks to the fetch spoke itself. */
#include "spokes/sdk/mcp_server.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOTE_MAX 65536

#define TITLE_SCHEMA                                                                               \
    "{\"type\":\"string\",\"minLength\":1,\"maxLength\":80,\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9 "  \
    "_.-]*$\"}"

static const char add_in[] = "{\"type\":\"object\",\"properties\":{\"title\":" TITLE_SCHEMA
                             ",\"text\":{\"type\":\"string\",\"maxLength\":65536}},"
                             "\"required\":[\"title\",\"text\"],\"additionalProperties\":false}";
static const char saved_out[] = "{\"type\":\"object\",\"properties\":{\"saved\":{\"type\":"
                                "\"string\"},\"bytes\":{\"type\":\"integer\"}},\"required\":["
                                "\"saved\",\"bytes\"]}";
static const char list_in[] = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":"
                              "false}";
static const char list_out[] = "{\"type\":\"object\",\"properties\":{\"titles\":{\"type\":"
                               "\"array\",\"items\":{\"type\":\"string\"}}},\"required\":["
                               "\"titles\"]}";
static const char get_in[] = "{\"type\":\"object\",\"properties\":{\"title\":" TITLE_SCHEMA
                             "},\"required\":[\"title\"],\"additionalProperties\":false}";
static const char get_out[] = "{\"type\":\"object\",\"properties\":{\"title\":{\"type\":"
                              "\"string\"},\"text\":{\"type\":\"string\"}},\"required\":["
                              "\"title\",\"text\"]}";
static const char clip_in[] = "{\"type\":\"object\",\"properties\":{\"title\":" TITLE_SCHEMA
                              ",\"url\":{\"type\":\"string\",\"maxLength\":2048,\"pattern\":"
                              "\"^https://\"}},\"required\":[\"title\",\"url\"],"
                              "\"additionalProperties\":false}";

/* The hub validated the title against the schema; checked again here because this is
 * the code that turns it into a path. */
static bool safe_title(const char *t)
{
    if (!t || !*t || t[0] == '.' || strlen(t) > 80)
        return false;
    for (const char *p = t; *p; p++)
        if (*p == '/' || (unsigned char)*p < 0x20)
            return false;
    return true;
}

static char *note_path(struct mcp_server *s, const char *title)
{
    char *dir = xasprintf("%s/notes", mcp_data_dir(s));
    mkdir(dir, 0700);
    char *p = xasprintf("%s/%s.txt", dir, title);
    free(dir);
    return p;
}

static json_t *save(struct mcp_server *s, const char *title, const char *text, size_t len)
{
    if (!safe_title(title))
        return mcp_error_result("bad title");
    char *path = note_path(s, title);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    free(path);
    if (fd < 0 || write_all(fd, text, len) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return mcp_error_result("cannot save the note: %s", strerror(e));
    }
    close(fd);
    return mcp_structured_result(json_pack("{s:s,s:I}", "saved", title, "bytes", (json_int_t)len));
}

static int tool_add(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    json_t *text = json_object_get(args, "text");
    *result = save(s, json_string_value(json_object_get(args, "title")), json_string_value(text),
                   json_string_length(text));
    return 0;
}

static int tool_list(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)args;
    (void)ud;
    char *dir = xasprintf("%s/notes", mcp_data_dir(s));
    json_t *titles = json_array();
    DIR *d = opendir(dir);
    free(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] != '.' && n > 4 && strcmp(e->d_name + n - 4, ".txt") == 0)
            json_array_append_new(titles, json_stringn(e->d_name, n - 4));
    }
    if (d)
        closedir(d);
    *result = mcp_structured_result(json_pack("{s:o}", "titles", titles));
    return 0;
}

static int tool_get(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *title = json_string_value(json_object_get(args, "title"));
    if (!safe_title(title)) {
        *result = mcp_error_result("bad title");
        return 0;
    }
    char *path = note_path(s, title);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(path);
    if (fd < 0) {
        *result = mcp_error_result("no note titled \"%s\"", title);
        return 0;
    }
    char *buf = xmalloc(NOTE_MAX + 1);
    ssize_t n = read_full(fd, buf, NOTE_MAX);
    close(fd);
    if (n < 0)
        n = 0;
    buf[n] = '\0';
    *result =
        mcp_structured_result(json_pack("{s:s,s:s%}", "title", title, "text", buf, (size_t)n));
    free(buf);
    return 0;
}

/* Asks the hub to run fetch.get: the hub checks the arguments, asks the user, runs
 * fetch in its own sandbox, checks the result and asks again before handing it here. */
static int tool_clip(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *title = json_string_value(json_object_get(args, "title"));
    json_t *fargs = json_pack("{s:O}", "url", json_object_get(args, "url"));
    json_t *r = NULL;
    char err[512];
    int code = mcp_isolate_call(s, "fetch.get", fargs, &r, err, sizeof(err));
    json_decref(fargs);
    if (code != 0) {
        *result = mcp_error_result("fetch.get through the hub failed (%d): %s", code, err);
        return 0;
    }
    json_t *sc = json_object_get(r, "structuredContent");
    json_t *body = json_object_get(sc, "body");
    if (json_is_true(json_object_get(r, "isError")) || !json_is_string(body)) {
        json_t *c0 = json_array_get(json_object_get(r, "content"), 0);
        *result = mcp_error_result("fetch.get failed: %s",
                                   json_string_value(json_object_get(c0, "text"))
                                       ? json_string_value(json_object_get(c0, "text"))
                                       : "no details");
    } else {
        *result = save(s, title, json_string_value(body), json_string_length(body));
    }
    json_decref(r);
    return 0;
}

int main(void)
{
    struct mcp_server *s = mcp_server_new("notes", "1.0");
    mcp_server_add_tool(s, "add", "Saves a short note under a title.", add_in, saved_out, tool_add,
                        NULL);
    mcp_server_add_tool(s, "list", "Lists the titles of the saved notes.", list_in, list_out,
                        tool_list, NULL);
    mcp_server_add_tool(s, "get", "Returns the note with this title.", get_in, get_out, tool_get,
                        NULL);
    mcp_server_add_tool(s, "clip",
                        "Fetches a web page through the fetch app and saves it as a note.", clip_in,
                        saved_out, tool_clip, NULL);
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
