/* sigbus.h — copies that survive memory that vanishes under them. A shared-memory object mapped by
 * the daemon (engine/regions.c) may be truncated by its owner at any time; touching its pages past the
 * new end raises SIGBUS, which would kill the daemon. wp_guarded_copy turns that fault into an error.
 * Owns: the process's SIGBUS handler (installed once, by wp_sigbus_install); a thread-local jump
 * point per copy. Any thread may copy; install from main before other threads start (it is also safe
 * to call again). A SIGBUS outside a guarded copy keeps its default action (the process dies, with
 * the core a real bug deserves). */
#ifndef WP_SIGBUS_H
#define WP_SIGBUS_H

#include <stddef.h>

/* Installs the handler (idempotent). 0, or -1 with errno. */
int wp_sigbus_install(void);
/* memcpy(dst, src, n), except that a SIGBUS on either side ends it: returns 0, or -1 when the copy
 * faulted (dst then holds a part of the bytes). Needs wp_sigbus_install first (else a fault kills). */
int wp_guarded_copy(void *dst, const void *src, size_t n);
/* fn(arg), except that a SIGBUS inside it ends it: returns 0, or -1 when it faulted. fn may touch shared
 * mappings many times (a doorbell's spin, engine/channels.c) at the cost of one guard; it must not take
 * locks, allocate or hold anything a jump out of it would leak. Needs wp_sigbus_install first. */
int wp_guarded_run(void (*fn)(void *), void *arg);

#endif
