/* lib/audit: ECS records, one line each, sanitised, failures reported. */
#include "audit.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    char path[] = "/tmp/audit-test-XXXXXX";
    int tmp = mkstemp(path);
    close(tmp);
    char err[256];
    struct audit *a = audit_open(path, "test", err, sizeof(err));
    CHECK(a != NULL, "open %s", path);

    json_t *rec = json_object();
    audit_set_str(rec, "event.action", "connect");
    audit_set_int(rec, "destination.port", 443);
    audit_set(rec, "source.address",
              audit_string("a\x01\n\xff"
                           "b",
                           5, 64));
    CHECK(audit_write(a, rec) == 0, "record written");

    char big[5000];
    memset(big, 'x', sizeof(big));
    rec = json_object();
    audit_set(rec, "url.original", audit_string(big, sizeof(big), 100));
    CHECK(audit_write(a, rec) == 0, "capped record written");
    CHECK(audit_written(a) == 2, "two records counted");

    FILE *f = fopen(path, "r");
    char line[8192];
    CHECK(fgets(line, sizeof(line), f) != NULL, "first line read");
    json_t *back = json_loads(line, 0, NULL);
    CHECK(back != NULL, "line is JSON");
    CHECK_STR(json_string_value(json_object_get(json_object_get(back, "event"), "action")),
              "connect", "event.action nested");
    CHECK(json_integer_value(json_object_get(json_object_get(back, "destination"), "port")) == 443,
          "destination.port nested");
    CHECK(json_object_get(back, "@timestamp") != NULL, "@timestamp stamped");
    CHECK_STR(json_string_value(json_object_get(json_object_get(back, "source"), "address")),
              "a\x01\n\xef\xbf\xbd"
              "b",
              "invalid UTF-8 replaced, controls kept as data");
    CHECK(strstr(line, "\\n") != NULL && strchr(line, '\n') == line + strlen(line) - 1,
          "newline inside a value is escaped");
    json_decref(back);
    CHECK(fgets(line, sizeof(line), f) != NULL, "second line read");
    back = json_loads(line, 0, NULL);
    const char *url = json_string_value(json_object_get(json_object_get(back, "url"), "original"));
    CHECK(url && strlen(url) < 130 && strstr(url, "[truncated]"), "long value capped and marked");
    json_decref(back);
    fclose(f);
    audit_close(a);
    unlink(path);

    /* /dev/full fails every write with ENOSPC: the caller must be told. */
    a = audit_open("/dev/full", "test", err, sizeof(err));
    CHECK(a != NULL, "open /dev/full");
    rec = json_object();
    audit_set_str(rec, "event.action", "x");
    errno = 0;
    CHECK(audit_write(a, rec) == -1 && errno == ENOSPC, "disk full is reported as ENOSPC");
    CHECK(audit_failed(a) == 1, "failure counted");
    audit_close(a);

    /* audit_reopen_fd: records go to the descriptor handed in (the netproxy helper). */
    char path2[] = "/tmp/audit-test-XXXXXX";
    tmp = mkstemp(path2);
    close(tmp);
    a = audit_open("/dev/full", "test", err, sizeof(err));
    int fd2 = open(path2, O_WRONLY | O_APPEND | O_CLOEXEC);
    CHECK(a && fd2 >= 0, "open /dev/full and a second file");
    audit_reopen_fd(a, fd2);
    rec = json_object();
    audit_set_str(rec, "event.action", "after-reopen");
    CHECK(audit_write(a, rec) == 0, "write after audit_reopen_fd succeeds");
    audit_close(a);
    f = fopen(path2, "r");
    CHECK(f && fgets(line, sizeof(line), f) && strstr(line, "after-reopen"),
          "the record is in the new file");
    if (f)
        fclose(f);
    unlink(path2);

    char id1[33], id2[33];
    audit_new_id(id1);
    audit_new_id(id2);
    CHECK(strlen(id1) == 32 && strcmp(id1, id2) != 0, "ids are 32 hex and differ");
    return test_done();
}
