/* The MCP server of tests/oci's images: linked statically (nothing of the host's is
 * needed in the image), one JSON-RPC message a line on stdin/stdout. Its tool "probe"
 * reports what the image's process sees from inside, as the attacker would look: its
 * ids (the image marks this very file setuid root), whether host files exist, whether
 * its root and /etc can be written, the image's own marker file. PROBE_EXTRA in its
 * environment (the image's config) adds a tool "extra", for the image that changes
 * under the same tag. Trusted input (the hub); bounded anyway. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The value of "key" in line (a number or a string with its quotes), or "null". */
static void field(const char *line, const char *key, char *out, size_t outlen)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\"", key);
    const char *p = strstr(line, pat);
    snprintf(out, outlen, "null");
    if (!p)
        return;
    p += strlen(pat);
    while (*p == ' ' || *p == ':')
        p++;
    size_t n = 0;
    if (*p == '"') {
        const char *e = strchr(p + 1, '"');
        n = e ? (size_t)(e - p) + 1 : 0;
    } else {
        n = strcspn(p, ",}] ");
    }
    if (n > 0 && n < outlen) {
        memcpy(out, p, n);
        out[n] = '\0';
    }
}

static const char *arg1 = ""; /* the first argument, "" when none */

static int can_create(const char *path)
{
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        return 0;
    close(fd);
    unlink(path);
    return 1;
}

static void probe(char *out, size_t outlen)
{
    char marker[128] = "";
    FILE *f = fopen("/etc/image-release", "r");
    if (f) {
        if (!fgets(marker, sizeof(marker), f))
            marker[0] = '\0';
        fclose(f);
    }
    marker[strcspn(marker, "\n\"\\")] = '\0';
    char passwd[128] = "";
    f = fopen("/etc/passwd", "r");
    if (f) {
        if (!fgets(passwd, sizeof(passwd), f))
            passwd[0] = '\0';
        fclose(f);
    }
    passwd[strcspn(passwd, "\n\"\\")] = '\0';
    struct stat self;
    int self_mode = stat("/srv/imgspoke", &self) == 0 ? (int)(self.st_mode & 07777) : -1;
    char cwd[256] = "";
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = '\0';
    snprintf(out, outlen,
             "{\\\"uid\\\":%d,\\\"euid\\\":%d,\\\"host_shadow\\\":%d,\\\"host_usr\\\":%d,"
             "\\\"write_root\\\":%d,\\\"write_etc\\\":%d,\\\"write_srv\\\":%d,"
             "\\\"write_data\\\":%d,\\\"marker\\\":\\\"%s\\\",\\\"self_mode\\\":%d,"
             "\\\"cwd\\\":\\\"%s\\\",\\\"version\\\":\\\"%s\\\",\\\"passwd\\\":\\\"%s\\\","
             "\\\"proc_self\\\":%d,\\\"proc_fake\\\":%d,\\\"tmp_planted\\\":%d,"
             "\\\"extra\\\":%d,\\\"arg1\\\":\\\"%.60s\\\"}",
             (int)getuid(), (int)geteuid(), access("/etc/shadow", F_OK) == 0,
             access("/usr/bin/env", F_OK) == 0, can_create("/oci-probe"),
             can_create("/etc/oci-probe"), can_create("/srv/oci-probe"),
             can_create("/data/oci-probe"), marker, self_mode, cwd,
             getenv("PROBE_VERSION") ? getenv("PROBE_VERSION") : "", passwd,
             access("/proc/self/status", F_OK) == 0, access("/proc/fake", F_OK) == 0,
             access("/tmp/planted", F_OK) == 0, access("/extra/file", F_OK) == 0, arg1);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strpbrk(argv[1], "\"\\"))
        arg1 = argv[1];
    static char line[1 << 16];
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof(line), stdin)) {
        char id[128], method[128], version[64], name[64];
        field(line, "id", id, sizeof(id));
        field(line, "method", method, sizeof(method));
        if (strcmp(id, "null") == 0)
            continue; /* a notification */
        if (strcmp(method, "\"initialize\"") == 0) {
            field(line, "protocolVersion", version, sizeof(version));
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":%s,"
                   "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"imgspoke\","
                   "\"version\":\"1.0\"}}}\n",
                   id, version);
        } else if (strcmp(method, "\"tools/list\"") == 0) {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":["
                   "{\"name\":\"probe\",\"description\":\"Reports what the image's process "
                   "sees.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}%s]}}\n",
                   id,
                   getenv("PROBE_EXTRA")
                       ? ",{\"name\":\"extra\",\"description\":\"A tool the new image adds.\","
                         "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}"
                       : "");
        } else if (strcmp(method, "\"tools/call\"") == 0) {
            char text[2048];
            field(line, "name", name, sizeof(name));
            if (strcmp(name, "\"probe\"") == 0)
                probe(text, sizeof(text));
            else
                snprintf(text, sizeof(text), "extra");
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
                   "\"text\":\"%s\"}]}}\n",
                   id, text);
        } else if (strcmp(method, "\"ping\"") == 0) {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", id);
        } else {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":"
                   "\"no such method\"}}\n",
                   id);
        }
    }
    return 0;
}
