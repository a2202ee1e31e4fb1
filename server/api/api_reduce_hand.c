/* api_reduce_hand.c — a small reduce or scan job on the GPU under load, handed to the batcher's runners
 * (batch_exec.h) instead of a worker: the request moves to the heap, its connection is parked
 * (wp_req_park), and the runner that ran its batch writes the answer (api_reduce.c's reduce_answer) and
 * unparks it. api_reduce.c decides when (a cached small job with its data in the body). */
#include <stdlib.h>

#include "api.h"
#include "api_reduce_impl.h"

/* The request on the heap, and how it is answered (api_reduce.c's, passed in: no file here needs it). */
typedef struct {
    reduce_req q;
    reduce_answer_fn answer;
} handed_req;

static bool hand_park(void *ctx) {
    handed_req *h = ctx;
    return wp_req_park(h->q.req, NULL, h);
}

/* On the runner, once the job has run: the answer written there (the HTTP threads' cores serve the
 * connections), then the connection unparked, to send it. */
static void hand_done(void *ctx, int rc, const wp_err *err) {
    handed_req *h = ctx;
    reduce_req *q = &h->q;
    if (rc < 0) q->err = *err;
    const wp_batch_reduce *j = &q->job;
    const double run_us = j->untimed ? j->device_us : j->upload_us + j->res.kernel_us + j->download_us;
    const double wait_us = wp_us_since(q->t_hand_ns) - run_us;
    q->hand_wait_us = wait_us > 0 ? wait_us : 0;
    const wp_req *req = q->req;
    h->answer(q->app, q, q->resp, rc);
    free(h);
    wp_req_unpark(req);
}

int reduce_hand(wp_app *app, reduce_req *q, wp_resp *resp, reduce_answer_fn answer) {
    handed_req *h = malloc(sizeof *h);
    if (!h) return 1;
    h->q = *q;
    h->answer = answer;
    reduce_req *hq = &h->q;
    hq->job.job.spec = &hq->spec;
    hq->app = app;
    hq->resp = resp;
    hq->t_hand_ns = wp_now_ns();
    if (wp_batch_hand_reduce(app, hq->be, &hq->job, hand_park, hand_done, h) == 0) return 0;
    free(h); /* it took nothing: q still owns every part */
    return 1;
}
