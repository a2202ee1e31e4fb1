/* on_behalf.h — whom the calling thread works for now: the name of the user whose request or job it
 * runs, a note of the thread's own that the layers below the request read without it being passed down
 * every call (the device gates: a CUDA device hands its next free stream to the waiting users in turn,
 * server/backend/lane_gate.h).
 *
 * Threads: each thread has a note of its own, empty at its start (the daemon's own work: start-up,
 * prewarm, reapers, background builds). Set only by the thread itself, around the work it does for a
 * user: an HTTP worker around a handler, an async job's worker around its job, a channel's thread for
 * its owner. A thread started for a part of a user's work (a sharded job's parts) has none: the daemon's.
 * Read by any code on that thread. No lock: nothing is shared between threads.
 * Owns: the notes (thread-local). */
#ifndef WP_ON_BEHALF_H
#define WP_ON_BEHALF_H

#define WP_ON_BEHALF_MAX 32 /* characters of a name kept (a user's name has at most 32: http/users.h) */

/* From now on this thread works for user (copied, cut at WP_ON_BEHALF_MAX); NULL or "": for the daemon. */
void wp_on_behalf_set(const char *user);
/* Whom this thread works for: the name set, or NULL (the daemon). Valid until this thread's next set. */
const char *wp_on_behalf(void);

#endif
