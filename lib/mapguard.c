#include "mapguard.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

__thread sigjmp_buf *mapguard_jump;

static struct sigaction previous;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    sigjmp_buf *j = mapguard_jump;
    if (j) {
        mapguard_jump = NULL;
        siglongjmp(*j, 1);
    }
    /* Not ours: whoever handled it before, or the default action when the faulting
     * instruction runs again. */
    if (previous.sa_flags & SA_SIGINFO && previous.sa_sigaction) {
        previous.sa_sigaction(sig, si, uc);
        return;
    }
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler) {
        previous.sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &previous);
}

void mapguard_install(void)
{
    pthread_once(&install_once, install);
}

void mapguard_leave(void)
{
    mapguard_jump = NULL;
}

void mapguard_recovered(void)
{
    mapguard_jump = NULL;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}
