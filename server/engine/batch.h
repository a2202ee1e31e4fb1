/* batch.h — dynamic batching: small jobs that share a kernel key meet in a queue and run as one
 * backend call (one upload, one launch, one download: batch_warp.c, batch_reduce.c). What Triton's
 * dynamic batcher does for models, for warpd's jobs.
 *
 * A job enters the queue of its (owner, key) — owner is the backend it runs on, key the kernel key
 * plus everything a batched launch needs to be equal (batch_warp.c, batch_reduce.c build it). The
 * first job to find the queue with a free slot (fewer than `concurrency` batches running) and nobody
 * gathering becomes a leader: it waits up to the window (0: not at all; nor when the leader is on an
 * HTTP thread, no_wait) for more jobs, takes up to `max` waiting jobs (itself first) and runs them
 * through `run`, outside every lock. While every slot runs, jobs that arrive wait in the queue; when a
 * batch is done its leader hands each of its jobs its result (only they wake) and makes the oldest
 * waiting job the next leader. So with a window of 0 a batch is what was already waiting: under load,
 * everything that arrived while the slots were busy; with several slots, batches of one key overlap
 * on the device's streams.
 *
 * Handed over (wp_batcher_hand): a job whose caller must not block — an HTTP thread's, whose event
 * loop serves other connections meanwhile — is pushed, without a lock, on one stack of handed jobs.
 * One of the batcher's runner threads (cfg.runners, made at open) takes the stack whole, runs it as
 * batches of one (owner, key) — up to max jobs each, in the order they came, no window — and calls
 * each job's `on_done` instead of waking a waiting caller. Under load the runners are busy and a
 * hand-over wakes nobody: what was pushed meanwhile is the next batch.
 *
 * Threads: wp_batcher_submit may be called from any thread (HTTP threads answering small jobs inline,
 * workers, async jobs) and blocks the caller until its job has run, at most the window plus the runs
 * of the batch ahead and its own: a leader never waits on anything but its window and its own run,
 * so when every caller is a follower their leaders still finish and nothing deadlocks. `run` is
 * called on the leader's thread (a runner's for handed jobs). wp_batcher_hand may be called from any
 * thread and returns at once; `on_done` is called on a runner, once per job, with no lock held.
 * wp_batcher_stats may be called from any thread. wp_batcher_close joins the runners: no job may be
 * queued or running then.
 * Owns: wp_batcher, its queues and runner threads; not the jobs (the callers': on their stacks, or
 * wherever a handed job's owner keeps it until `on_done`). */
#ifndef WP_BATCH_H
#define WP_BATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct wp_batcher wp_batcher;

#define WP_BATCH_KEY_MAX 768
#define WP_BATCH_MAX_DEFAULT 64
#define WP_BATCH_MAX_LIMIT 256
#define WP_BATCH_WINDOW_MAX_US 1000000 /* --batch-window-us at most one second */

typedef struct {
    int window_us;   /* 0: batch only what is already waiting */
    int max;         /* jobs in one batch; 1: no batching (every job runs alone, at once) */
    int concurrency; /* batches of one queue that may run at once (the device's streams); 0 or 1: one */
    int runners;     /* threads that run handed jobs' batches (wp_batcher_hand); 0: none, hand refuses */
} wp_batch_config;

typedef struct wp_batch_job wp_batch_job;

/* Runs n >= 1 jobs of one queue as one backend call and fills in each job's results (through its
 * payload). Called on the leader's thread with no batcher lock held. */
typedef void (*wp_batch_run_fn)(wp_batch_job *const *jobs, int n);

/* A job, owned by the caller (usually on its stack); set owner, key, run and payload, then submit. */
struct wp_batch_job {
    const void *owner; /* what the queue is per: the backend */
    char key[WP_BATCH_KEY_MAX];
    wp_batch_run_fn run; /* the same for every job of one key */
    void *payload;       /* the caller's job and result */
    bool no_wait;        /* the caller is an HTTP thread: leading, it takes what waits now, never the window */
    void (*on_done)(wp_batch_job *job); /* a handed job's: called on the runner after run (size set) */
    /* a handed job's, optional: called on the runner first, before it is batched — it may fill in key
     * (the HTTP thread need not); false: the job is not run, on_done is called at once */
    bool (*prepare)(wp_batch_job *job);
    /* in, optional: when the caller began making this entry (its sized spec, its key), so that queue_us
     * counts that too; 0: at the submit */
    uint64_t t_entry_ns;
    int size;        /* out: the size of the batch it ran in */
    double queue_us; /* out: from its entry to its batch's run (the entry, the window, the batches ahead) */
    /* the batcher's */
    uint64_t t_queued_ns; /* t_entry_ns, or when it was submitted */
    struct wp_batch_job *next;
    bool done, leader;
    pthread_cond_t cond; /* it waits here: for its result, or to lead */
};

wp_batcher *wp_batcher_open(const wp_batch_config *cfg);
void wp_batcher_close(wp_batcher *bt); /* no job may be in flight */
int wp_batcher_max(const wp_batcher *bt);
int wp_batcher_runners(const wp_batcher *bt);   /* runner threads running (0: wp_batcher_hand refuses) */
int wp_batcher_window_us(const wp_batcher *bt); /* --batch-window-us */

/* Runs job in a batch of its key (alone when max is 1) and returns when it has run; returns the
 * batch's size (also in job->size). */
int wp_batcher_submit(wp_batcher *bt, wp_batch_job *job);

/* Runs job at once as a batch of one, on the calling thread, counted as one, without its queue (its key
 * unused): for a job no other can join — an HTTP thread's under --inline-gpu idle, the one request in
 * flight — whose queue's lock, condition variable and key cost a lone job at one connection about
 * 1 µs. Returns 1. */
int wp_batcher_run_alone(wp_batcher *bt, wp_batch_job *job);

/* Queues job (owner, key or prepare, run, payload and on_done set) for a runner and returns at once: 0, or -1 when the
 * batcher has no runners, batches of one (max 1) or no memory for a queue — the caller then runs the
 * job itself (wp_batcher_submit). The job must stay where it is until on_done(job) is called. */
int wp_batcher_hand(wp_batcher *bt, wp_batch_job *job);

/* For /metrics: batches run, jobs in them, and how many batches had a size up to each bound. */
#define WP_BATCH_BUCKETS 8
extern const int wp_batch_bucket_le[WP_BATCH_BUCKETS]; /* 1, 2, 4, ..., 64; the last bucket is +Inf */
typedef struct {
    uint64_t batches, jobs;
    uint64_t le[WP_BATCH_BUCKETS + 1]; /* cumulative, as Prometheus histograms count; [BUCKETS]: +Inf */
    int waiting;                       /* jobs queued now, waiting for a batch (leaders in a window too) */
    int window_us, max;
} wp_batch_stats;
void wp_batcher_stats(wp_batcher *bt, wp_batch_stats *out);

#endif
