/* systemd's readiness protocol for the daemons (units with Type=notify): READY once
 * they serve, STOPPING when they begin to end. Through libsystemd's sd_notify; without
 * NOTIFY_SOCKET in the environment (not started by systemd) each call does nothing. */
#ifndef ISOLATE_NOTIFY_H
#define ISOLATE_NOTIFY_H

/* READY=1 and STATUS=<status> (shown by systemctl status). */
void notify_ready(const char *status);
void notify_stopping(void);

#endif
