/* sd_notify for the daemons: see notify.h. */
#include "notify.h"
#include "util.h"

#include <stdlib.h>
#include <systemd/sd-daemon.h>

void notify_ready(const char *status)
{
    char *msg = xasprintf("READY=1\nSTATUS=%s", status ? status : "ready");
    /* unset_environment 0: a hub that re-reads its configuration stays notifiable. */
    (void)sd_notify(0, msg);
    free(msg);
}

void notify_stopping(void)
{
    (void)sd_notify(0, "STOPPING=1");
}
