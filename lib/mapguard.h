/* A guard for reads and writes of a shared file mapping that another process may cut
 * short (ftruncate): touching a page past the file's new end raises SIGBUS, which would
 * end the process. Inside a guarded section the fault returns to the section's start
 * instead, and the caller drops the mapping. Outside one, SIGBUS is left to the handler
 * that was there before (or the default). */
#ifndef LIB_MAPGUARD_H
#define LIB_MAPGUARD_H

#include <setjmp.h>
#include <stdbool.h>

extern __thread sigjmp_buf *mapguard_jump;

/* Installs the SIGBUS handler, once per process. */
void mapguard_install(void);

/* true on entry; false when a SIGBUS inside the section came back here (the caller
 * then calls mapguard_recovered and stops using the mapping). The signal mask is not
 * saved: no system call on the way in. */
#define mapguard_enter(buf) (mapguard_jump = &(buf), sigsetjmp((buf), 0) == 0)
void mapguard_leave(void);
/* After a fault: SIGBUS is unblocked again in this thread (the handler left it blocked). */
void mapguard_recovered(void);

#endif
