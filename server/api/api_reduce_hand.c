/* api_reduce_hand.c — a small reduce or scan job on the GPU under load, handed to the batcher's runners
 * (batch_exec.h) instead of a worker: the request moves into its call's room, its connection is parked
 * (wp_req_park), the runner that ran its batch unparks it, and its HTTP thread writes the answer
 * (api_reduce.c's reduce_answer). The request and the batcher's room take no allocation of their own
 * (wp_req_room); what the HTTP thread allocated for the request's parts is given
 * back on the HTTP thread when the call ends (wp_req_on_end), not on the runner.
 * api_reduce.c decides when (a cached small job with its data in the body). */
#include <stddef.h>
#include <stdlib.h>

#include "api.h"
#include "api_reduce_impl.h"

/* The request on the heap, how it is answered and given back (api_reduce.c's, passed in: no file here
 * needs it), then the batcher's room for the hand-over. */
typedef struct {
    reduce_req q;
    reduce_answer_fn answer;
    reduce_free_fn free_parts;
    int rc;             /* the run's, set by the runner before it unparks */
    max_align_t room[]; /* wp_batch_hand_reduce_room() bytes */
} handed_req;

/* When the call ends: on its HTTP thread (or on the runner, when the client went while it ran). h is
 * the call's room, which stays the call's. */
static void hand_release(void *ctx) {
    handed_req *h = ctx;
    h->free_parts(h->q.app, &h->q);
}

/* On the HTTP thread, once the runner is done: the answer, written where it is sent. A runner writes
 * one answer after another while its batch's connections wait; here the HTTP threads write theirs side by
 * side, and the text stays in the cache of the core that sends it. */
static void hand_finish(void *app, const wp_req *req, wp_resp *resp, void *ctx) {
    (void)app, (void)req;
    handed_req *h = ctx;
    reduce_req *q = &h->q;
    /* the runners' queue and the way back: not the run, nor the runner's lookup of the batch's kernel */
    q->hand_wait_us = wp_batch_reduce_own_us(&q->job, wp_us_since(q->t_hand_ns));
    h->answer(q->app, q, resp, h->rc);
}

static bool hand_park(void *ctx) {
    handed_req *h = ctx;
    if (!wp_req_park(h->q.req, hand_finish, h)) return false;
    wp_req_on_end(h->q.req, hand_release, h);
    return true;
}

/* On the runner, once the job has run: its outcome kept, the connection unparked (hand_finish answers). */
static void hand_done(void *ctx, int rc, const wp_err *err) {
    handed_req *h = ctx;
    if (rc < 0) h->q.err = *err;
    h->rc = rc;
    wp_req_unpark(h->q.req); /* h is the HTTP thread's from here on */
}

int reduce_hand(wp_app *app, reduce_req *q, reduce_answer_fn answer, reduce_free_fn free_parts) {
    handed_req *h = wp_req_room(q->req, sizeof *h + wp_batch_hand_reduce_room());
    if (!h) return 1;
    h->q = *q;
    h->answer = answer;
    h->free_parts = free_parts;
    reduce_req *hq = &h->q;
    hq->job.job.spec = &hq->spec;
    hq->app = app;
    hq->t_hand_ns = wp_now_ns();
    if (wp_batch_hand_reduce(app, hq->be, &hq->job, hand_park, hand_done, h, h->room) == 0) return 0;
    return 1; /* it took nothing: q still owns every part */
}
