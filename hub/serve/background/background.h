/* hub/serve/background/'s interface: the background hub: the daemon (serve_background.c), its control socket
 * (serve_control.c) and a stdio client attached to it (serve_attach.c). */
#ifndef HUB_SERVE_BACKGROUND_H
#define HUB_SERVE_BACKGROUND_H

#include "serve/serve_impl.h"

/* ---- serve_control.c ---- */
struct ctl_conn;
/* For the control socket's other requests: the user the peer acts as (want, or the
 * hub's, for a privileged peer; its account for control_users "unix"), NULL after
 * refusing it. */
const char *serve_control_user(struct ctl_conn *c, const char *want, char *buf, size_t len);
void serve_control_reply(struct ctl_conn *c, json_t *msg);
/* Root, or the account this hub runs as: it may act as any user (and see every user's
 * questions), since it could run a hub of its own as any of them. */
bool serve_control_peer_privileged(const struct ctl_conn *c);
unsigned serve_control_peer_uid(const struct ctl_conn *c);
struct serve *serve_control_serve(const struct ctl_conn *c);
/* Closes the socket and every connection (attached sessions end). */
void serve_control_stop(struct serve *sv);
void serve_control_refuse(struct ctl_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- serve_attach.c ---- */
/* A connection to the control socket: its descriptor, -2 when no hub listens there
 * (or none is configured), -1 with err. */
int serve_control_connect(const struct hub_config *cfg, char *err, size_t errlen);

#endif
