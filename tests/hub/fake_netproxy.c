/* A stand-in for netproxy's control side (lib/ctl.h), for testing the hub's
 * supervisor without the real proxy: it answers add/remove/ping, checks that each add
 * carries a listening socket bound where the message says, and records what it holds
 * in AUDIT.state (one line "pid N" then one line per spoke: "KEY ADDRESS"), rewritten
 * after every message (AUDIT is its --audit argument: the hub gives netproxy no
 * environment to pass anything else). A file AUDIT.mode holding "hang" makes it stop
 * answering pings; "refuse" makes it refuse every add.
 * Usage: fake_netproxy --control FD --audit AUDIT [ignored netproxy options...]. */
#include "ctl.h"
#include "netaddr.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct held {
    char key[80];
    char addr[64];
    int fd;
};

static struct held held[256];
static size_t n_held;

static void write_state(const char *path)
{
    char *tmp = xasprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        exit(125);
    fprintf(f, "pid %d\n", (int)getpid());
    for (size_t i = 0; i < n_held; i++)
        fprintf(f, "%s %s\n", held[i].key, held[i].addr);
    fclose(f);
    rename(tmp, path);
    free(tmp);
}

int main(int argc, char **argv)
{
    int ctl = -1;
    const char *audit = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--control") == 0)
            ctl = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--audit") == 0)
            audit = argv[i + 1];
    }
    if (ctl < 0 || !audit)
        return 125;
    char *state = xasprintf("%s.state", audit);
    char *mode_path = xasprintf("%s.mode", audit);
    char mode_buf[32] = "";
    FILE *mf = fopen(mode_path, "r");
    if (mf) {
        if (!fgets(mode_buf, sizeof(mode_buf), mf))
            mode_buf[0] = '\0';
        mode_buf[strcspn(mode_buf, "\n")] = '\0';
        fclose(mf);
    }
    const char *mode = mode_buf[0] ? mode_buf : NULL;
    write_state(state);
    for (;;) {
        json_t *msg = NULL;
        int fd = -1;
        int rc = ctl_recv(ctl, &msg, &fd);
        if (rc <= 0)
            return rc == 0 ? 0 : 1;
        const char *op = json_string_value(json_object_get(msg, "op"));
        const char *key = json_string_value(json_object_get(msg, "spoke"));
        json_t *reply = NULL;
        if (op && strcmp(op, "ping") == 0) {
            if (mode && strcmp(mode, "hang") == 0) {
                json_decref(msg);
                continue;
            }
            reply = json_pack("{s:b}", "ok", 1);
        } else if (op && strcmp(op, "add") == 0 && key) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof(ss);
            int listening = 0;
            socklen_t ll = sizeof(listening);
            char addr[64] = "?";
            if (fd >= 0 && getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
                getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) == 0 && listening) {
                char ip[48];
                sockaddr_format_ip((struct sockaddr *)&ss, ip, sizeof(ip));
                snprintf(addr, sizeof(addr), "%s:%u", ip, sockaddr_port((struct sockaddr *)&ss));
            }
            const char *want = json_string_value(json_object_get(msg, "listen"));
            if (mode && strcmp(mode, "refuse") == 0) {
                reply = json_pack("{s:b,s:s}", "ok", 0, "error", "refused by the fake");
                if (fd >= 0)
                    close(fd);
            } else if (!want || strcmp(want, addr) != 0 || n_held == 256) {
                reply = json_pack("{s:b,s:s}", "ok", 0, "error", "no listening socket on listen");
                if (fd >= 0)
                    close(fd);
            } else {
                snprintf(held[n_held].key, sizeof(held[n_held].key), "%s", key);
                snprintf(held[n_held].addr, sizeof(held[n_held].addr), "%s", addr);
                held[n_held++].fd = fd;
                reply = json_pack("{s:b}", "ok", 1);
            }
        } else if (op && strcmp(op, "remove") == 0 && key) {
            for (size_t i = 0; i < n_held; i++)
                if (strcmp(held[i].key, key) == 0) {
                    close(held[i].fd);
                    held[i] = held[--n_held];
                    break;
                }
            reply = json_pack("{s:b}", "ok", 1);
        } else {
            reply = json_pack("{s:b,s:s}", "ok", 0, "error", "unknown op");
        }
        write_state(state);
        ctl_send(ctl, reply, -1);
        json_decref(reply);
        json_decref(msg);
    }
}
