/* drive: the user's cloud drive (case study 2). Files live in files/ under its data
 * directory; one of them, "SSN", is what the attacker is after. */
#include "drive_manifest.h"
#include "spokes/sdk/manifest_tools.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX 65536

static bool safe_name(const char *n)
{
    if (!n || !*n || n[0] == '.' || strlen(n) > 100)
        return false;
    for (const char *p = n; *p; p++)
        if (*p == '/' || (unsigned char)*p < 0x20)
            return false;
    return true;
}

static int tool_list(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)args;
    (void)ud;
    char *dir = xasprintf("%s/files", mcp_data_dir(s));
    DIR *d = opendir(dir);
    json_t *files = json_array();
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
            json_array_append_new(
                files, json_pack("{s:s,s:I}", "name", e->d_name, "bytes", (json_int_t)st.st_size));
        free(p);
    }
    if (d)
        closedir(d);
    free(dir);
    *result = mcp_structured_result(json_pack("{s:o}", "files", files));
    return 0;
}

static int tool_read(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *name = json_string_value(json_object_get(args, "name"));
    if (!safe_name(name)) {
        *result = mcp_error_result("bad file name");
        return 0;
    }
    char *p = xasprintf("%s/files/%s", mcp_data_dir(s), name);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(p);
    if (fd < 0) {
        *result = mcp_error_result("no file named \"%s\"", name);
        return 0;
    }
    char *buf = xmalloc(FILE_MAX + 1);
    ssize_t n = read_full(fd, buf, FILE_MAX);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    *result = mcp_structured_result(
        json_pack("{s:s,s:s%}", "name", name, "content", buf, (size_t)(n > 0 ? n : 0)));
    free(buf);
    return 0;
}

int main(void)
{
    struct mcp_server *s = mcp_server_new("drive", "1.0");
    static const struct mcp_handler handlers[] = {{"list_files", tool_list, NULL},
                                                  {"read_file", tool_read, NULL}};
    mcp_server_add_manifest_tools(s, drive_manifest, handlers, ARRAY_LEN(handlers));
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
