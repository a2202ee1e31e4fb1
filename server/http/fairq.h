/* fairq.h — a queue taken in turn by owner: round-robin over the users who have something waiting,
 * first come first served within one user. The HTTP work queue (http.c) and the async jobs' queue
 * (engine/jobs.c) are these, so one user with 64 requests waiting makes another user's one wait
 * behind at most one of theirs per free worker, not behind all 64.
 *
 * Intrusive: a node lives in what is queued (a request, a job). Each owner waiting has a lane (a FIFO);
 * the lanes are visited in a fixed order from where the last take left off. An owner is a name
 * (users.h); it must outlive its node. Beyond WP_FAIRQ_LANES owners waiting at once, the rest share
 * the last lane.
 * Owns: nothing but its lanes; no lock: the caller's lock guards it (O(lanes) per call, with lanes
 * the owners waiting now, typically 1 to 3). */
#ifndef WP_FAIRQ_H
#define WP_FAIRQ_H

#include <stdbool.h>
#include <stdint.h>

#define WP_FAIRQ_LANES 64
#define WP_FAIRQ_NAME_MAX 32

typedef struct wp_fair_node {
    struct wp_fair_node *next;
    int lane; /* the fairq's */
} wp_fair_node;

typedef struct {
    struct {
        char owner[WP_FAIRQ_NAME_MAX + 1];
        wp_fair_node *head, *tail;
    } lane[WP_FAIRQ_LANES];
    int lanes;      /* lanes used so far (a lane left empty is reused by the next new owner) */
    int cursor;     /* the lane the next take looks at first */
    int depth;      /* nodes queued */
    uint64_t taken; /* nodes taken since the start: the turn counter */
} wp_fairq;

/* Zeroes q. */
void wp_fairq_init(wp_fairq *q);
/* Appends n to owner's lane. */
void wp_fairq_push(wp_fairq *q, wp_fair_node *n, const char *owner);
/* The next node in turn, or NULL when empty. */
wp_fair_node *wp_fairq_pop(wp_fairq *q);
/* Takes n out (a cancelled job); false when it is not queued. */
bool wp_fairq_remove(wp_fairq *q, wp_fair_node *n);

#endif
