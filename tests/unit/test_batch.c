/* test_batch.c — server/engine/batch.c without HTTP or backends: jobs that wait while a batch of their key
 * runs form the next batch, all of them up to max (then the rest, in order); max 1 runs every job
 * alone; keys and owners never share a batch; every job runs exactly once and learns its batch size
 * and its wait in the queue (from an entry begun earlier, too); the counters add up; a batched reduce's
 * own time leaves out its kernel's lookup and the device's run. A batch's run blocks on a gate, so every queue is
 * filled on purpose (the test waits for the batcher's own count of waiting jobs), not by timing. The
 * batch memory pool (batch_mem.c) keeps each device's buffers apart: a batch on device 1 never gets
 * device 0's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "engine/batch.h"
#include "engine/batch_exec.h"
#include "t.h"
#include "util/common.h"

#define JOBS_MAX 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static int at_gate; /* batches held at the gate */

typedef struct {
    int id, runs, ran_in; /* ran_in: the batch number that ran it */
    bool gated;           /* its batch waits for the gate */
    bool mixed;           /* its batch held another key or owner */
} payload;

static int batches_seen, batch_sizes[JOBS_MAX * 2];
static int running, max_running; /* batches inside run() now, and the most at once */

static void run(wp_batch_job *const *jobs, int n) {
    bool gated = false;
    for (int i = 0; i < n; i++) gated |= ((payload *)jobs[i]->payload)->gated;
    pthread_mutex_lock(&mu);
    if (++running > max_running) max_running = running;
    at_gate += gated;
    pthread_cond_broadcast(&cv);
    while (gated && !gate_open) pthread_cond_wait(&cv, &mu);
    running--;
    int b = batches_seen++;
    batch_sizes[b] = n;
    for (int i = 0; i < n; i++) {
        payload *p = jobs[i]->payload;
        p->runs++;
        p->ran_in = b;
        p->mixed = jobs[i]->owner != jobs[0]->owner || strcmp(jobs[i]->key, jobs[0]->key);
    }
    pthread_mutex_unlock(&mu);
}

typedef struct {
    wp_batcher *bt;
    wp_batch_job job;
    payload p;
    int size;
} submitter;

static void *submit(void *arg) {
    submitter *s = arg;
    s->size = wp_batcher_submit(s->bt, &s->job);
    return NULL;
}

static void start_as(submitter *s, pthread_t *th, wp_batcher *bt, const void *owner, const char *key, int id,
                     bool gated, bool no_wait) {
    *s = (submitter){.bt = bt, .p = {.id = id, .gated = gated}};
    s->job = (wp_batch_job){.owner = owner, .run = run, .payload = &s->p, .no_wait = no_wait};
    snprintf(s->job.key, sizeof s->job.key, "%s", key);
    pthread_create(th, NULL, submit, s);
}
static void start(submitter *s, pthread_t *th, wp_batcher *bt, const void *owner, const char *key, int id, bool gated) {
    start_as(s, th, bt, owner, key, id, gated, false);
}

static void wait_waiting(wp_batcher *bt, int n) { /* until n jobs wait in queues (or 10 s) */
    for (int i = 0; i < 10000; i++) {
        wp_batch_stats st;
        wp_batcher_stats(bt, &st);
        if (st.waiting == n) return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECKF(0, "never saw %d jobs waiting", n);
}

static void wait_at_gate(int n) { /* until n gated batches are running (or 10 s: then it fails, not hangs) */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&mu);
    int rc = 0;
    while (at_gate < n && rc == 0) rc = pthread_cond_timedwait(&cv, &mu, &until);
    int seen = at_gate;
    pthread_mutex_unlock(&mu);
    CHECKF(seen >= n, "%d batches at the gate after 10 s, want %d", seen, n);
}

static void reset(void) {
    pthread_mutex_lock(&mu);
    gate_open = false;
    at_gate = 0;
    batches_seen = 0;
    max_running = 0;
    pthread_mutex_unlock(&mu);
}
static void open_gate(void) {
    pthread_mutex_lock(&mu);
    gate_open = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* A gated leader runs; `n` jobs of its key queue behind it; then the gate opens. */
static void queued_behind(int max, int n) {
    wp_batch_config cfg = {.window_us = 0, .max = max};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[JOBS_MAX + 1];
    static pthread_t th[JOBS_MAX + 1];
    int owner;
    reset();
    start(&s[0], &th[0], bt, &owner, "k", 0, true);
    wait_at_gate(1); /* the leader took itself and runs: nothing waits */
    for (int i = 1; i <= n; i++) {
        start(&s[i], &th[i], bt, &owner, "k", i, false);
        wait_waiting(bt, i); /* one at a time: the queue keeps their order */
    }
    open_gate();
    for (int i = 0; i <= n; i++) pthread_join(th[i], NULL);
    CHECKF(s[0].size == 1 && s[0].p.ran_in == 0, "the leader ran in batch %d of %d", s[0].p.ran_in, s[0].size);
    int expect_batches = 1 + (n + max - 1) / max;
    CHECKF(batches_seen == expect_batches, "max %d, %d waiting: %d batches, want %d", max, n, batches_seen,
           expect_batches);
    for (int i = 1; i <= n; i++) {
        int b = 1 + (i - 1) / max, want = b < expect_batches - 1 || n % max == 0 ? max : n % max;
        CHECKF(s[i].p.runs == 1 && s[i].p.ran_in == b && s[i].size == want,
               "max %d: job %d ran %d times, in batch %d of size %d (want batch %d of %d)", max, i, s[i].p.runs,
               s[i].p.ran_in, s[i].size, b, want);
    }
    wp_batch_stats st;
    wp_batcher_stats(bt, &st);
    CHECKF(st.batches == (uint64_t)expect_batches && st.jobs == (uint64_t)n + 1, "stats: %llu batches, %llu jobs",
           (unsigned long long)st.batches, (unsigned long long)st.jobs);
    CHECK(st.le[0] == 1 && st.le[WP_BATCH_BUCKETS] == st.batches); /* one batch of 1, all within +Inf */
    wp_batcher_close(bt);
}

/* Two keys and two owners, each queue behind its own gated leader: no batch mixes them. */
static void keys_apart(void) {
    wp_batch_config cfg = {.window_us = 0, .max = 64};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[24];
    static pthread_t th[24];
    int owner_a, owner_b;
    const void *owners[] = {&owner_a, &owner_a, &owner_b};
    const char *keys[] = {"sum", "max", "sum"};
    reset();
    for (int q = 0; q < 3; q++) start(&s[q], &th[q], bt, owners[q], keys[q], q, true);
    wait_at_gate(3);
    for (int i = 3; i < 24; i++) start(&s[i], &th[i], bt, owners[i % 3], keys[i % 3], i, false);
    wait_waiting(bt, 21);
    open_gate();
    for (int i = 0; i < 24; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 24; i++)
        CHECKF(s[i].p.runs == 1 && !s[i].p.mixed, "job %d: %d runs, mixed %d", i, s[i].p.runs, s[i].p.mixed);
    for (int i = 3; i < 24; i++) CHECKF(s[i].size == 7, "job %d: batch of %d, want its queue's 7", i, s[i].size);
    CHECK(batches_seen == 6);
    wp_batcher_close(bt);
}

/* --batch-max 1: every job alone, at once, even with many at the same time. */
static void max_one(void) {
    wp_batch_config cfg = {.window_us = 20000, .max = 1};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[16];
    static pthread_t th[16];
    int owner;
    reset();
    open_gate();
    for (int i = 0; i < 16; i++) start(&s[i], &th[i], bt, &owner, "k", i, false);
    for (int i = 0; i < 16; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 16; i++) CHECKF(s[i].size == 1 && s[i].p.runs == 1, "job %d: size %d", i, s[i].size);
    wp_batch_stats st;
    wp_batcher_stats(bt, &st);
    CHECK(st.batches == 16 && st.jobs == 16 && st.max == 1);
    wp_batcher_close(bt);
}

/* A window: the leader waits for more; it stops waiting once max jobs wait (a 5 s window never ends). */
static void window_fills(void) {
    wp_batch_config cfg = {.window_us = 5000000, .max = 4};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[4];
    static pthread_t th[4];
    int owner;
    reset();
    open_gate();
    for (int i = 0; i < 4; i++) start(&s[i], &th[i], bt, &owner, "k", i, false);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) CHECKF(s[i].size == 4 && s[i].p.runs == 1, "job %d: size %d", i, s[i].size);
    CHECK(batches_seen == 1);
    wp_batcher_close(bt);
}

/* A leader on an HTTP thread (no_wait) never waits out the window: with a 5 s window and max 2, A
 * (no_wait, gated) runs alone at once, and B, arriving after, is a batch of its own. A leader that
 * waited would take B into its batch (max 2 waiting ends the window): A's size would be 2. */
static void no_wait_leader(void) {
    wp_batch_config cfg = {.window_us = 5000000, .max = 2};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[2];
    static pthread_t th[2];
    int owner;
    reset();
    start_as(&s[0], &th[0], bt, &owner, "k", 0, true, true);
    for (int i = 0; i < 3000; i++) { /* until A runs (at the gate), or 3 s: then B goes anyway */
        pthread_mutex_lock(&mu);
        int n = at_gate;
        pthread_mutex_unlock(&mu);
        if (n) break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    start_as(&s[1], &th[1], bt, &owner, "k", 1, false, true);
    wait_waiting(bt, 1); /* B queued behind A's running batch */
    open_gate();
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECKF(s[0].size == 1 && s[1].size == 1 && batches_seen == 2, "A in a batch of %d, B of %d, %d batches", s[0].size,
           s[1].size, batches_seen);
    wp_batcher_close(bt);
}

/* A submitter's job through wp_batcher_run_alone; its size (not 0 once it returned) set under mu. */
static void *alone_main(void *arg) {
    submitter *a = arg;
    const int size = wp_batcher_run_alone(a->bt, &a->job);
    pthread_mutex_lock(&mu);
    a->size = size;
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* A job run alone (wp_batcher_run_alone: an HTTP thread's under --inline-gpu idle) does not queue: while
 * a gated batch of its key and owner holds the one slot, it runs at once on the calling thread, alone,
 * counted as a batch of one; the job queued behind the gate still waits for it. Through the queue it
 * would wait behind the gate (the call would not return until it opened). */
static void run_alone(void) {
    wp_batch_config cfg = {.window_us = 0, .max = 8, .concurrency = 1};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[2];
    static pthread_t th[2];
    int owner;
    reset();
    start(&s[0], &th[0], bt, &owner, "k", 0, true);
    wait_at_gate(1);
    start(&s[1], &th[1], bt, &owner, "k", 1, false);
    wait_waiting(bt, 1);
    submitter a = {.bt = bt};
    a.job = (wp_batch_job){.owner = &owner, .run = run, .payload = &a.p, .no_wait = true, .t_entry_ns = wp_now_ns()};
    snprintf(a.job.key, sizeof a.job.key, "k");
    pthread_t ta;
    pthread_create(&ta, NULL, alone_main, &a);
    bool returned = false; /* before the gate opens (or 5 s: then it fails, not hangs) */
    for (int i = 0; i < 5000 && !returned; i++) {
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        pthread_mutex_lock(&mu);
        returned = a.size != 0;
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    const int seen = batches_seen, queued_runs = s[1].p.runs;
    pthread_mutex_unlock(&mu);
    CHECKF(returned && a.size == 1 && a.job.size == 1 && a.p.runs == 1 && seen == 1 && queued_runs == 0,
           "returned %d, size %d, runs %d, %d batches, the queued job's runs %d", returned, a.size, a.p.runs, seen,
           queued_runs);
    CHECKF(a.job.t_queued_ns == a.job.t_entry_ns, "queued at %llu, entered at %llu",
           (unsigned long long)a.job.t_queued_ns, (unsigned long long)a.job.t_entry_ns);
    wp_batch_stats st;
    wp_batcher_stats(bt, &st);
    CHECKF(st.batches == 1 && st.jobs == 1 && st.le[0] == 1 && st.waiting == 1, "batches %llu jobs %llu waiting %d",
           (unsigned long long)st.batches, (unsigned long long)st.jobs, st.waiting);
    open_gate();
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_join(ta, NULL);
    CHECKF(s[0].size == 1 && s[1].size == 1 && s[1].p.runs == 1, "gated %d, queued %d", s[0].size, s[1].size);
    wp_batcher_close(bt);
}

/* The wait in the queue each job learns (queue_us): a lone leader waits out its window (2 ms here: the
 * timed wait ends no sooner), and a job queued behind a gated batch waits at least as long as the gate
 * stays shut after it queued (50 ms). Lower bounds only: a loaded machine makes both longer. */
static void queue_time(void) {
    wp_batch_config cfg = {.window_us = 2000, .max = 8};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[2];
    static pthread_t th[2];
    int owner;
    reset();
    open_gate();
    start(&s[0], &th[0], bt, &owner, "k", 0, false);
    pthread_join(th[0], NULL);
    CHECKF(s[0].size == 1 && s[0].job.queue_us >= 2000, "alone: size %d, queue_us %.1f", s[0].size, s[0].job.queue_us);
    wp_batcher_close(bt);

    cfg.window_us = 0;
    bt = wp_batcher_open(&cfg);
    reset();
    start(&s[0], &th[0], bt, &owner, "k", 0, true); /* leads, held at the gate */
    wait_at_gate(1);
    start(&s[1], &th[1], bt, &owner, "k", 1, false);
    wait_waiting(bt, 1);
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    open_gate();
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECKF(s[1].job.queue_us >= 50000 && s[0].job.queue_us >= 0, "leader %.1f us, queued behind it %.1f us",
           s[0].job.queue_us, s[1].job.queue_us);
    wp_batcher_close(bt);

    /* a caller that began the entry earlier (t_entry_ns) has that time counted too: a second here */
    bt = wp_batcher_open(&cfg);
    reset();
    start(&s[0], &th[0], bt, &owner, "k", 0, false);
    pthread_join(th[0], NULL); /* the first ran: s[0] is reused below */
    s[0] = (submitter){.bt = bt, .p = {.id = 1}};
    s[0].job = (wp_batch_job){.owner = &owner, .run = run, .payload = &s[0].p, .t_entry_ns = wp_now_ns() - 1000000000};
    snprintf(s[0].job.key, sizeof s[0].job.key, "k");
    submit(&s[0]);
    CHECKF(s[0].job.queue_us >= 1e6 && s[0].job.t_entry_ns != 0, "entry a second ago: queue_us %.1f",
           s[0].job.queue_us);
    wp_batcher_close(bt);
}

/* A batched reduce's own time: its time from its entry to its batch's end less its kernel's lookup and
 * the device's run, whichever way it ran; nothing counted twice, never below 0, whole ns. */
static void own_time(void) {
    wp_batch_reduce j = {.untimed = true, .device_us = 60, .upload_us = 7, .download_us = 7};
    j.res.key_us = 5, j.res.cache_us = 3, j.res.load_us = 2, j.res.kernel_us = 9;
    CHECK(wp_batch_reduce_own_us(&j, 100) == 30); /* untimed: the round trip, not the timed steps */
    j.untimed = false;
    CHECK(wp_batch_reduce_own_us(&j, 100) == 67); /* timed: 7 + 9 + 7 */
    CHECK(wp_batch_reduce_own_us(&j, 20) == 0);   /* clocks that disagree: 0, not negative */
    CHECK(wp_batch_reduce_own_us(&j, 33.0014999) == 0.001 && wp_batch_reduce_own_us(&j, 33.123456) == 0.123);
    /* a warp job's: no lookup in the batch (its kernel came with it) */
    wp_run_timing t = {.untimed = true, .device_us = 60, .upload_us = 7, .kernel_us = 9, .download_us = 7};
    CHECK(wp_batch_warp_own_us(&t, 100) == 40);
    t.untimed = false;
    CHECK(wp_batch_warp_own_us(&t, 100) == 77 && wp_batch_warp_own_us(&t, 20) == 0 &&
          wp_batch_warp_own_us(&t, 23.123456) == 0.123);
}

/* concurrency 2: two gated batches of one key run at once (one slot each), the third job waits for a
 * slot; when one batch ends, every job that waited forms the next batch in the freed slot, and no
 * more than two ever run together. Then 40 more jobs with the gate open (started once the first four
 * are done, or one might join the waiting pair's batch): each job runs once. */
static void two_slots(void) {
    wp_batch_config cfg = {.window_us = 0, .max = 64, .concurrency = 2};
    wp_batcher *bt = wp_batcher_open(&cfg);
    static submitter s[44];
    static pthread_t th[44];
    int owner;
    reset();
    start(&s[0], &th[0], bt, &owner, "k", 0, true);
    wait_at_gate(1);
    start(&s[1], &th[1], bt, &owner, "k", 1, true);
    wait_at_gate(2); /* the second slot: a batch of its own beside the first */
    for (int i = 2; i < 4; i++) {
        start(&s[i], &th[i], bt, &owner, "k", i, false);
        wait_waiting(bt, i - 1);
    }
    open_gate();
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL); /* before more jobs: they would join the pair */
    for (int i = 4; i < 44; i++) start(&s[i], &th[i], bt, &owner, "k", i, false);
    for (int i = 4; i < 44; i++) pthread_join(th[i], NULL);
    CHECKF(s[0].size == 1 && s[1].size == 1 && s[0].p.ran_in != s[1].p.ran_in, "slots: sizes %d %d", s[0].size,
           s[1].size);
    CHECKF(s[2].size == 2 && s[3].size == 2 && s[2].p.ran_in == s[3].p.ran_in, "the waiting pair: sizes %d %d",
           s[2].size, s[3].size);
    int runs = 0;
    for (int i = 0; i < 44; i++) runs += s[i].p.runs == 1;
    CHECKF(runs == 44, "%d of 44 jobs ran exactly once", runs);
    CHECKF(max_running <= 2, "%d batches of one key ran at once, concurrency 2", max_running);
    wp_batch_stats st;
    wp_batcher_stats(bt, &st);
    CHECK(st.jobs == 44 && st.waiting == 0);
    wp_batcher_close(bt);
}

/* Two emulated devices (--emu-devices 2): an idle buffer is reused on its own device only. */
static void mem_per_device(void) {
    wp_backend *d0 = wp_backend_emu_open(), *d1 = wp_backend_emu_open_device(1);
    wp_batch_mem *m = wp_batch_mem_open();
    wp_err err = {0};
    CHECK(d0 && d1 && m);
    if (!d0 || !d1 || !m) return;
    wp_buf *a = wp_batch_mem_take(m, d0, 1000, &err);
    CHECKF(a && wp_buf_backend(a) == d0, "device 0: %s", err.msg);
    wp_batch_mem_put(m, a, true); /* idle on device 0 */
    wp_buf *b = wp_batch_mem_take(m, d1, 1000, &err);
    CHECKF(b && b != a && wp_buf_backend(b) == d1, "device 1 got device 0's buffer or none: %s", err.msg);
    wp_buf *again = wp_batch_mem_take(m, d0, 1000, &err);
    CHECK(again == a); /* device 0's idle buffer, reused there */
    wp_batch_mem_put(m, b, true);
    wp_batch_mem_put(m, again, true);
    wp_batch_mem_close(m); /* frees both, each on its device */
    wp_backend_close(d1);
    wp_backend_close(d0);
}

/* ---- handed jobs (wp_batcher_hand): runner threads run them, then call on_done ---- */

static int dones;             /* on_done calls so far */
static int done_of[JOBS_MAX]; /* per job id: on_done calls */

static void on_done(wp_batch_job *job) {
    pthread_mutex_lock(&mu);
    done_of[((payload *)job->payload)->id]++;
    dones++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static bool prepare_fails(wp_batch_job *job) {
    (void)job;
    return false;
}

static void wait_dones(int n) { /* until n on_done calls (or 10 s: then it fails, not hangs) */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&mu);
    while (dones < n && pthread_cond_timedwait(&cv, &mu, &until) == 0) {
    }
    pthread_mutex_unlock(&mu);
}

/* One runner held at the gate by job 0 while nine more are handed: they form batches of one key each, in
 * the order they came, up to max; a job whose prepare fails is done at once and never runs. */
static void handed(void) {
    wp_batch_config cfg = {.max = 4, .runners = 1};
    wp_batcher *bt = wp_batcher_open(&cfg);
    CHECK(wp_batcher_runners(bt) == 1);
    static const char *const keys[10] = {"k", "k", "j", "k", "k", "j", "k", "k", "k", "j"};
    static wp_batch_job jobs[10];
    static payload p[10];
    int owner;
    reset();
    pthread_mutex_lock(&mu);
    dones = 0;
    memset(done_of, 0, sizeof done_of);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 10; i++) {
        p[i] = (payload){.id = i, .gated = i == 0};
        jobs[i] = (wp_batch_job){.owner = &owner, .run = run, .payload = &p[i], .on_done = on_done};
        snprintf(jobs[i].key, sizeof jobs[i].key, "%s", keys[i]);
        if (i == 4) jobs[i].prepare = prepare_fails;
        CHECKF(wp_batcher_hand(bt, &jobs[i]) == 0, "job %d handed", i);
        if (i == 0) wait_at_gate(1); /* the runner took it alone and runs it: the rest pile up */
    }
    pthread_mutex_lock(&mu); /* the one runner is held in job 0's run: nothing else is taken yet (job 4's
                              * failed prepare too happens when the pile is taken) */
    CHECKF(dones == 0, "nothing done while the runner is held (%d)", dones);
    pthread_mutex_unlock(&mu);
    open_gate();
    wait_dones(10);
    static const int batch_of[10] = {0, 1, 2, 1, -1, 2, 1, 1, 3, 2}, size_of[4] = {1, 4, 3, 1};
    for (int i = 0; i < 10; i++) {
        const int b = batch_of[i];
        CHECKF(done_of[i] == 1, "job %d done %d times", i, done_of[i]);
        CHECKF(b < 0 ? p[i].runs == 0 : p[i].runs == 1 && p[i].ran_in == b && jobs[i].size == size_of[b] && !p[i].mixed,
               "job %d (%s) ran %d times in batch %d of %d (want batch %d)", i, keys[i], p[i].runs, p[i].ran_in,
               jobs[i].size, b);
    }
    CHECKF(batches_seen == 4, "%d batches", batches_seen);
    wp_batch_stats st;
    wp_batcher_stats(bt, &st);
    CHECK(st.batches == 4 && st.jobs == 9);
    wp_batcher_close(bt);
    wp_batch_config none = {.max = 4};
    bt = wp_batcher_open(&none); /* no runners: a hand is refused, the caller runs the job itself */
    CHECK(wp_batcher_runners(bt) == 0 && wp_batcher_hand(bt, &jobs[1]) == -1);
    wp_batcher_close(bt);
}

int main(void) {
    T_CASE("all waiting jobs form the next batch");
    queued_behind(64, 10);
    T_CASE("batch-max splits them, in order");
    queued_behind(4, 10);
    T_CASE("keys and owners apart");
    keys_apart();
    T_CASE("a window gathers up to max");
    window_fills();
    T_CASE("a leader on an HTTP thread takes no window");
    no_wait_leader();
    T_CASE("a job run alone: at once, beside a running batch of its key, counted as one");
    run_alone();
    T_CASE("max 1");
    max_one();
    T_CASE("the wait in the queue: a lone leader's window, the batch ahead");
    queue_time();
    T_CASE("a batched reduce's own time");
    own_time();
    T_CASE("two slots: batches of one key side by side, never more");
    two_slots();
    T_CASE("batch memory per device");
    mem_per_device();
    T_CASE("handed jobs: runners batch them by key, in order; a failed prepare is done unrun");
    handed();
    return t_done("batch");
}
