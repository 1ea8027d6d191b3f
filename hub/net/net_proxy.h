/* The netproxy supervisor: starts `netproxy --control FD`, hands it one listening
 * socket per networked spoke with that spoke's policy (lib/ctl.h), checks it is alive
 * (a ping every few seconds), and when it dies or hangs restarts it and hands every
 * socket over again. The hub keeps its own copy of each listening socket, so a
 * spoke's connections made while the proxy restarts wait in the listen backlog
 * instead of failing. Restarts back off (up to 2 s) and stop after 10 within a
 * minute: a proxy that cannot stay up is reported instead of spinning. */
#ifndef HUB_NET_PROXY_H
#define HUB_NET_PROXY_H

#include "audit.h"
#include "config/config.h"
#include "spoke_secrets.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy_sup;

/* Called when netproxy refuses a spoke's policy or cannot be kept running: the hub
 * stops that spoke (key) or, with key NULL, every networked spoke. */
typedef void (*proxy_error_fn)(void *ud, const char *key, const char *message);

struct proxy_sup *proxy_sup_new(struct event_base *base, struct audit *audit,
                                const struct hub_config *cfg, const char *log_path, bool debug,
                                proxy_error_fn on_error, void *ud, char *err, size_t errlen);
/* SIGTERM, a short wait, then SIGKILL. */
void proxy_sup_free(struct proxy_sup *p);

/* A spoke's policy and sockets (lib/ctl.h, "add"). */
struct proxy_spoke {
    const char *key, *user;
    char *const *allow; /* NULL-terminated registrable domains */
    const uint16_t *ports;
    size_t n_ports;
    char *const *tcp;   /* NULL-terminated raw TCP grants "HOST:PORT", or NULL */
    const char *listen; /* its listener's address */
    int fd;
    const char *dns_listen; /* its resolver's address, or NULL */
    int dns_fd;             /* -1: none */
    /* The secrets netproxy puts into its requests (may be NULL; host-mode bindings). */
    const struct spoke_secrets *sec;
};

/* Registers a spoke's listener and resolver (duplicated; the caller keeps its own). */
int proxy_add_spoke(struct proxy_sup *p, const struct proxy_spoke *ps);
/* The same without a resolver or grants. */
int proxy_add(struct proxy_sup *p, const char *key, const char *user, char *const *allow,
              const uint16_t *ports, size_t n_ports, const char *listen, int fd,
              const struct spoke_secrets *sec);
/* A listener on the spoke's own loopback whose connections go to its grant "to" (fd is
 * taken over). */
int proxy_forward(struct proxy_sup *p, const char *key, const char *to, int fd);
void proxy_remove(struct proxy_sup *p, const char *key);
/* The hub's CA (PEM texts, copied), sent to netproxy now and after every restart, before
 * the spokes. Set once. */
void proxy_set_ca(struct proxy_sup *p, const char *cert_pem, const char *key_pem);
/* A secret's new value (and metadata): every spoke holding its stand-in gets it for its
 * next request. */
void proxy_secret_rotate(struct proxy_sup *p, const struct secret_meta *meta, const char *value,
                         size_t len);

/* The traceparent of the call the spoke (by key) runs alone, or NULL for none: its
 * tunnels' records join that trace (netproxy's control op "trace"). */
void proxy_trace(struct proxy_sup *p, const char *key, const char *traceparent);
/* The hub's span exporter (otlp.h): each traced tunnel's span goes to it. */
struct otlp;
void proxy_set_otlp(struct proxy_sup *p, struct otlp *o);
bool proxy_alive(const struct proxy_sup *p);
pid_t proxy_pid(const struct proxy_sup *p);
unsigned proxy_restarts(const struct proxy_sup *p);
size_t proxy_entries(const struct proxy_sup *p);
/* Operations sent and not yet answered. */
size_t proxy_pending(const struct proxy_sup *p);

#endif
