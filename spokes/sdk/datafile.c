#include "datafile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

json_t *mcp_data_load(const struct mcp_server *s, const char *name, size_t max, char *err,
                      size_t errlen)
{
    char *path = xasprintf("%s/%s", mcp_data_dir(s), name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", name, strerror(errno));
        free(path);
        return NULL;
    }
    free(path);
    char *buf = xmalloc(max + 1);
    ssize_t n = read_full(fd, buf, max + 1);
    int e = errno;
    close(fd);
    json_t *v = NULL;
    if (n < 0) {
        snprintf(err, errlen, "%s: %s", name, strerror(e));
    } else if ((size_t)n > max) {
        snprintf(err, errlen, "%s: larger than %zu bytes", name, max);
    } else {
        json_error_t je;
        v = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &je);
        if (!v)
            snprintf(err, errlen, "%s: line %d: %s", name, je.line, je.text);
    }
    free(buf);
    return v;
}

int mcp_data_save(const struct mcp_server *s, const char *name, const json_t *value, char *err,
                  size_t errlen)
{
    char *path = xasprintf("%s/%s", mcp_data_dir(s), name);
    char *tmp = xasprintf("%s.tmp", path);
    char *text = json_dumps(value, JSON_INDENT(1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = -1;
    if (fd < 0 || !text || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
        snprintf(err, errlen, "%s: %s", name, strerror(errno));
    } else if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "%s: %s", name, strerror(errno));
    } else {
        rc = 0;
    }
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    free(text);
    free(tmp);
    free(path);
    return rc;
}

json_t *mcp_data_load_list(const struct mcp_server *s, const char *name, size_t max)
{
    char err[256];
    json_t *a = mcp_data_load(s, name, max, err, sizeof(err));
    if (!json_is_array(a)) {
        json_decref(a);
        a = json_array();
    }
    return a;
}

json_t *mcp_data_book(const struct mcp_server *s, const char *name, size_t max, const char *prefix,
                      json_t *record, json_t *answer)
{
    json_t *list = mcp_data_load_list(s, name, max);
    char id[64], err[256];
    snprintf(id, sizeof(id), "%.32s-%04zu", prefix, json_array_size(list) + 1);
    json_t *kept = json_pack("{s:s}", "booking_id", id);
    json_object_update(kept, record);
    json_array_append_new(list, kept);
    json_decref(record);
    json_t *res;
    if (mcp_data_save(s, name, list, err, sizeof(err)) < 0) {
        res = mcp_error_result("cannot book: %s", err);
    } else {
        json_t *out = json_pack("{s:s}", "booking_id", id);
        json_object_update(out, answer);
        res = mcp_structured_result(out);
    }
    json_decref(answer);
    json_decref(list);
    return res;
}
