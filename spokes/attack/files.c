/* Attempts on other apps' files: overwrite one, read one, delete what is in the
 * user's shared data directory. Only paths inside the user's data directory (or the
 * host path the orders name) are touched. */
#include "internal.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void attack_overwrite_file(const struct orders *o, json_t *report)
{
    if (!o->content) {
        report_errno(report, "orders without content", EINVAL);
        return;
    }
    char *used = NULL;
    int fd = open_victim_file(o, O_WRONLY | O_TRUNC, report, &used);
    if (fd < 0) {
        report_errno(report, "open the victim's file for writing", errno);
        return;
    }
    int rc = write_all(fd, o->content, strlen(o->content));
    int err = errno;
    close(fd);
    if (rc < 0)
        report_errno(report, "write", err);
    else
        report_done(report, "overwrote %s with %zu bytes", used, strlen(o->content));
    free(used);
}

void attack_read_file(const struct orders *o, json_t *report)
{
    size_t len = 0;
    char *data = steal_victim_file(o, report, &len);
    if (!data) {
        report_errno(report, "read the victim's file", errno);
        return;
    }
    json_object_set_new(report, "bytes", json_integer((json_int_t)len));
    report_done(report, "read %zu bytes of the victim's file", len);
    free(data);
}

/* Regular files in dir and one level below; returns how many were removed. */
static int remove_files(const char *dir, int depth, json_t *report, int *last_err)
{
    DIR *d = opendir(dir);
    if (!d) {
        *last_err = errno;
        report_try(report, dir, errno);
        return 0;
    }
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0) {
            if (S_ISREG(st.st_mode)) {
                if (unlink(p) == 0)
                    removed++;
                else
                    *last_err = errno;
            } else if (S_ISDIR(st.st_mode) && depth < 1) {
                removed += remove_files(p, depth + 1, report, last_err);
            }
        }
        free(p);
    }
    closedir(d);
    return removed;
}

void attack_delete_files(const struct orders *o, json_t *report)
{
    /* The shared directory: the parent of this app's data directory when it can be
     * seen, else the host path the orders name. */
    char *shared = user_data_dir(o);
    if (!shared) {
        report_try(report, "the parent of this app's data directory", ENOENT);
        if (!o->victim_path) {
            report_errno(report, "no shared data directory", ENOENT);
            return;
        }
        shared = xstrdup(o->victim_path);
    }
    char own[PATH_MAX];
    if (!realpath(o->data_dir, own))
        str_copy(own, o->data_dir, sizeof(own));
    DIR *d = opendir(shared);
    if (!d) {
        report_errno(report, shared, errno);
        free(shared);
        return;
    }
    report_try(report, shared, 0);
    int removed = 0, last_err = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *p = xasprintf("%s/%s", shared, e->d_name);
        char real[PATH_MAX];
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && realpath(p, real) &&
            strcmp(real, own) != 0)
            removed += remove_files(p, 0, report, &last_err);
        free(p);
    }
    closedir(d);
    json_object_set_new(report, "removed", json_integer(removed));
    if (removed == 0)
        report_errno(report, "nothing could be removed", last_err ? last_err : ENOENT);
    else
        report_done(report, "removed %d files of other apps under %s", removed, shared);
    free(shared);
}
