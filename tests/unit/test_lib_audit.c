/* lib/audit: ECS records, one line each, sanitised, failures reported. */
#include "audit.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* A disk that fills in the middle of a record (here RLIMIT_FSIZE, which cuts write(2)
 * short the same way ENOSPC does): the record fails, leaves nothing in the file, and
 * the next record after space returns is a whole line of its own. */
static void test_cut_record(void)
{
    char path[] = "/tmp/audit-test-cut-XXXXXX";
    int tmp = mkstemp(path);
    close(tmp);
    char err[256];
    struct audit *a = audit_open(path, "test", err, sizeof(err));
    json_t *rec = json_object();
    audit_set_str(rec, "event.action", "first");
    CHECK(audit_write(a, rec) == 0, "cut: first record written");
    off_t before = file_size(path);

    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim.rlim_cur = (rlim_t)before + 40; /* room for part of the next record only */
    lim.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "cut: file size limit set");
    rec = json_object();
    audit_set_str(rec, "event.action", "second, cut short by the full disk");
    errno = 0;
    CHECK(audit_write(a, rec) == -1 && errno == EFBIG, "cut: the write fails with EFBIG (%s)",
          strerror(errno));
    CHECK(file_size(path) == before, "cut: the partial record was removed (%lld, was %lld)",
          (long long)file_size(path), (long long)before);
    CHECK(audit_failed(a) == 1, "cut: the failure is counted");
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);

    rec = json_object();
    audit_set_str(rec, "event.action", "third");
    CHECK(audit_write(a, rec) == 0, "cut: writing works again with room");
    FILE *f = fopen(path, "r");
    char line[4096];
    int lines = 0, json_lines = 0;
    while (f && fgets(line, sizeof(line), f)) {
        lines++;
        json_t *j = json_loads(line, 0, NULL);
        json_lines += j != NULL;
        json_decref(j);
    }
    if (f)
        fclose(f);
    CHECK(lines == 2 && json_lines == 2, "cut: the log is two whole JSON lines (%d, %d JSON)",
          lines, json_lines);
    audit_close(a);
    unlink(path);
}

/* Lines of path holding needle. */
static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* audit_say_outages: an outage of many lost records is said once when it starts and
 * once when the log works again (with the count), not per record; no sticky state. */
static void test_outage_said_once(void)
{
    char errpath[] = "/tmp/audit-test-stderr-XXXXXX", good[] = "/tmp/audit-test-good-XXXXXX";
    int errfd = mkstemp(errpath), goodfd = mkstemp(good);
    close(goodfd);
    fflush(stderr);
    int saved_stderr = dup(STDERR_FILENO);
    dup2(errfd, STDERR_FILENO);
    char err[256];
    struct audit *a = audit_open("/dev/full", "test", err, sizeof(err));
    audit_say_outages(a, "the test refuses what it must log");
    int fails = 0;
    for (int i = 0; i < 5; i++) {
        json_t *rec = json_object();
        audit_set_str(rec, "event.action", "lost");
        fails += audit_write(a, rec) == -1 && errno == ENOSPC;
    }
    uint64_t outage = audit_outage(a);
    audit_reopen_fd(a, open(good, O_WRONLY | O_APPEND | O_CLOEXEC));
    json_t *rec = json_object();
    audit_set_str(rec, "event.action", "back");
    int back = audit_write(a, rec);
    uint64_t after = audit_outage(a);
    audit_close(a);
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    close(errfd);
    CHECK(fails == 5 && outage == 5, "outage: 5 records lost, each reported to its caller");
    CHECK(back == 0 && after == 0, "outage: the log works again at once (nothing sticky)");
    CHECK(count_lines(errpath, "cannot be written (No space left on device): the test refuses") ==
              1,
          "outage: its start is said once on stderr, with why and the consequence");
    CHECK(count_lines(errpath, "is written again; 5 records could not be written") == 1,
          "outage: its end is said once, with the count");
    CHECK(count_lines(errpath, "audit log") == 2, "outage: nothing else is said");
    unlink(errpath);
    unlink(good);
}

int main(void)
{
    test_cut_record();
    test_outage_said_once();
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
