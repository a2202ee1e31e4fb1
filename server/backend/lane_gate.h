/* lane_gate.h — who gets a device's next free lane (cuda_impl.h: a stream with its scratch and
 * staging): the operations waiting for one are served in turn by user, not first come first served, so
 * one user's flood of large jobs holds another user's small one up by at most the next lane given back.
 *
 * The turn: each time a lane is given back with operations waiting, it goes to the user who holds the
 * fewest lanes now, of those the one served longest ago, of those the one whose first waiter came
 * first; within one user, first come first served. With every user waiting all the time that is
 * round-robin by user; a user with one operation waiting beside another's flood gets the next lane,
 * however many the flood has waiting. A lane given back goes straight to the waiter chosen: a thread
 * arriving meanwhile cannot take it first. Without a waiter, taking and giving back is a pop and a push
 * (and the user's slot found among the few in use).
 *
 * Users are names (util/on_behalf.h: whom the calling thread works for); NULL is the daemon's own
 * operations, a user of their own. Users are few (a lab): WP_LANE_GATE_USERS slots, a slot reused once
 * its user holds no lane and waits for none; past that many at once, the rest share the last slot.
 *
 * Owns: one device's free lanes (opaque pointers) and its waiters' queues. No lock of its own: the
 * caller holds the device's mutex around every call (wp_lane_gate_take sleeps with it released, each
 * waiter on a condition variable of its own, woken alone). */
#ifndef WP_LANE_GATE_H
#define WP_LANE_GATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/on_behalf.h"

#define WP_LANE_GATE_LANES 64 /* lanes a gate holds at most (WP_CUDA_STREAMS_MAX) */
#define WP_LANE_GATE_USERS 32 /* users with a lane or a waiter at once before they share a slot */

typedef struct wp_lane_waiter wp_lane_waiter; /* a waiting thread's (on its stack) */

typedef struct {
    void *free[WP_LANE_GATE_LANES];
    int n_free;
    struct {
        char name[WP_ON_BEHALF_MAX + 1]; /* "" for the daemon */
        int held;                        /* lanes its operations hold now */
        uint64_t served;                 /* the turn of its latest lane (0: none since the slot became its) */
        wp_lane_waiter *head, *tail;     /* its waiters, first come first */
    } user[WP_LANE_GATE_USERS];
    int users;         /* slots used so far */
    int waiting;       /* threads queued */
    uint64_t turns;    /* lanes handed out since the start */
    uint64_t arrivals; /* threads queued since the start (each waiter's ticket) */
} wp_lane_gate;

/* An empty gate: no lane, no waiter. */
void wp_lane_gate_init(wp_lane_gate *g);
/* Adds a lane to the free ones (the device's start); the latest added is the first taken. */
void wp_lane_gate_put(wp_lane_gate *g, void *lane);
/* A lane for an operation of user: a free one at once, else (mu released while it sleeps) the one
 * given back in user's turn. NULL only when wp_lane_gate_wake_all woke it without one. *who gets the
 * user's slot, for wp_lane_gate_give. mu held, the mutex that guards g. */
void *wp_lane_gate_take(wp_lane_gate *g, pthread_mutex_t *mu, const char *user, int *who);
/* The operation of slot who (wp_lane_gate_take's) is done with lane: it goes to the next waiter in
 * turn, or back to the free ones when none waits. */
void wp_lane_gate_give(wp_lane_gate *g, int who, void *lane);
/* Wakes every waiter with no lane (the device is lost: each finds out and fails). */
void wp_lane_gate_wake_all(wp_lane_gate *g);
/* A lane is free and no one waits. */
bool wp_lane_gate_idle(const wp_lane_gate *g);
/* Threads waiting for a lane now. */
int wp_lane_gate_waiting(const wp_lane_gate *g);

#endif
