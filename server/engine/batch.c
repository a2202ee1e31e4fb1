/* batch.c — the dynamic batcher (batch.h): per-(owner, key) queues, leaders that gather and run
 * batches (up to cfg.concurrency of one queue at once), followers that wait for their results. One
 * mutex guards every queue; each job waits on its own condition variable, so a batch's end wakes its
 * own jobs and the next leader, never the whole queue. Handed jobs take no lock: they are pushed on
 * one stack, and a runner thread takes it whole, runs it as batches of one (owner, key) and calls each
 * job's on_done.
 * Owns: wp_batcher, batch_queue, the runner threads. */
#include "batch.h"

#include "util/common.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const int wp_batch_bucket_le[WP_BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 256};

typedef struct batch_queue {
    struct batch_queue *next;
    const void *owner;
    char key[WP_BATCH_KEY_MAX];
    wp_batch_job *head, **tail; /* waiting, oldest first (a chosen leader stays at the head until it gathers) */
    int waiting;
    int users;              /* jobs inside wp_batcher_submit with this queue: the last one out frees an idle queue */
    int leaders;            /* batches gathering or running: at most cfg.concurrency */
    wp_batch_job *gatherer; /* the leader chosen and not yet done gathering (at most one) */
} batch_queue;

struct wp_batcher {
    wp_batch_config cfg;
    pthread_mutex_t lock;
    batch_queue *queues;
    uint64_t batches, jobs, le[WP_BATCH_BUCKETS + 1];
    /* handed jobs: a stack (newest first) that hands push without a lock and a runner takes whole;
     * a post of ready_sem each time it goes from empty to not, and one per runner to stop */
    _Atomic(wp_batch_job *) handed;
    sem_t ready_sem;
    atomic_bool stopping;
    pthread_t *runners;
    int n_runners;
};

static void *runner_main(void *arg);

/* The runner threads (cfg.runners of them; fewer if a thread cannot be made). */
static void runners_start(wp_batcher *bt) {
    if (bt->cfg.runners < 1 || bt->cfg.max < 2 || sem_init(&bt->ready_sem, 0, 0) != 0) {
        bt->cfg.runners = 0;
        return;
    }
    bt->runners = calloc((size_t)bt->cfg.runners, sizeof *bt->runners);
    for (int i = 0; bt->runners && i < bt->cfg.runners; i++) {
        if (pthread_create(&bt->runners[i], NULL, runner_main, bt) != 0) break;
        bt->n_runners++;
    }
}

wp_batcher *wp_batcher_open(const wp_batch_config *cfg) {
    wp_batcher *bt = calloc(1, sizeof *bt);
    if (!bt) return NULL;
    bt->cfg = *cfg;
    if (bt->cfg.max < 1) bt->cfg.max = 1;
    if (bt->cfg.max > WP_BATCH_MAX_LIMIT) bt->cfg.max = WP_BATCH_MAX_LIMIT;
    if (bt->cfg.window_us < 0) bt->cfg.window_us = 0;
    if (bt->cfg.concurrency < 1) bt->cfg.concurrency = 1;
    if (pthread_mutex_init(&bt->lock, NULL) != 0) {
        free(bt);
        return NULL;
    }
    runners_start(bt);
    return bt;
}

void wp_batcher_close(wp_batcher *bt) {
    if (!bt) return;
    atomic_store(&bt->stopping, true);
    for (int i = 0; i < bt->n_runners; i++) sem_post(&bt->ready_sem);
    for (int i = 0; i < bt->n_runners; i++) pthread_join(bt->runners[i], NULL);
    free(bt->runners);
    if (bt->cfg.runners > 0) sem_destroy(&bt->ready_sem);
    for (batch_queue *q = bt->queues, *next; q; q = next) {
        next = q->next;
        free(q);
    }
    pthread_mutex_destroy(&bt->lock);
    free(bt);
}

int wp_batcher_max(const wp_batcher *bt) { return bt->cfg.max; }
int wp_batcher_runners(const wp_batcher *bt) { return bt->n_runners; }
int wp_batcher_window_us(const wp_batcher *bt) { return bt->cfg.window_us; }

/* Lock held. The queue of (owner, key), made when missing (NULL when out of memory). */
static batch_queue *queue_get(wp_batcher *bt, const void *owner, const char *key) {
    for (batch_queue *q = bt->queues; q; q = q->next)
        if (q->owner == owner && !strcmp(q->key, key)) return q;
    batch_queue *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->owner = owner;
    snprintf(q->key, sizeof q->key, "%s", key);
    q->tail = &q->head;
    q->next = bt->queues;
    bt->queues = q;
    return q;
}

/* Lock held. Unlinks and frees a queue nobody uses any more (keys come and go with requests). */
static void queue_drop(wp_batcher *bt, batch_queue *q) {
    for (batch_queue **pp = &bt->queues; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            free(q);
            return;
        }
}

static void count(wp_batcher *bt, int n) {
    bt->batches++;
    bt->jobs += (uint64_t)n;
    for (int i = 0; i < WP_BATCH_BUCKETS; i++)
        if (n <= wp_batch_bucket_le[i]) bt->le[i]++;
    bt->le[WP_BATCH_BUCKETS]++;
}

/* Lock held. When a batch may start (a free slot, nobody gathering) and a job waits, the oldest waiting
 * job becomes its leader, and only it is woken. */
static void promote(wp_batcher *bt, batch_queue *q) {
    if (q->head && !q->gatherer && q->leaders < bt->cfg.concurrency) {
        q->leaders++;
        q->gatherer = q->head;
        q->head->leader = true;
        pthread_cond_signal(&q->head->cond);
    }
}

/* Lock held, job leads q (it is the head): waits out the window (or until max jobs wait), then takes
 * the batch, itself first. */
static int gather(wp_batcher *bt, batch_queue *q, wp_batch_job *leader, wp_batch_job **jobs) {
    if (bt->cfg.window_us > 0 && !leader->no_wait && q->waiting < bt->cfg.max) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        long long ns = until.tv_nsec + (long long)bt->cfg.window_us * 1000;
        until.tv_sec += (time_t)(ns / 1000000000);
        until.tv_nsec = (long)(ns % 1000000000);
        while (q->waiting < bt->cfg.max)
            if (pthread_cond_timedwait(&leader->cond, &bt->lock, &until) == ETIMEDOUT) break;
    }
    int n = 0;
    const uint64_t now = wp_now_ns();
    while (q->head && n < bt->cfg.max) {
        wp_batch_job *j = q->head;
        q->head = j->next;
        jobs[n++] = j;
        q->waiting--;
        j->queue_us = (double)(now - j->t_queued_ns) / 1e3;
    }
    if (!q->head) q->tail = &q->head;
    q->gatherer = NULL;
    return n;
}

/* Lock held: the job leaves q; the last one out frees it when idle. */
static void queue_leave(wp_batcher *bt, batch_queue *q) {
    if (--q->users == 0 && !q->leaders && !q->head) queue_drop(bt, q);
}

static void job_enter(wp_batch_job *job) {
    job->next = NULL;
    job->done = job->leader = false;
    job->size = 1;
    job->queue_us = 0;
    job->t_queued_ns = job->t_entry_ns ? job->t_entry_ns : wp_now_ns();
}

/* job run now as a batch of one; the lock not held. */
static int run_one(wp_batcher *bt, wp_batch_job *job) {
    pthread_mutex_lock(&bt->lock);
    count(bt, 1);
    pthread_mutex_unlock(&bt->lock);
    wp_batch_job *one[1] = {job};
    job->run(one, 1);
    return 1;
}

int wp_batcher_run_alone(wp_batcher *bt, wp_batch_job *job) {
    job_enter(job);
    return run_one(bt, job);
}

int wp_batcher_submit(wp_batcher *bt, wp_batch_job *job) {
    job_enter(job);
    bool can_wait = false;   /* its condition variable is made (glibc never fails to) */
    pthread_condattr_t attr; /* a window is timed on the monotonic clock: a clock step does not stretch it */
    if (bt->cfg.max > 1 && pthread_condattr_init(&attr) == 0) {
        can_wait = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&job->cond, &attr) == 0;
        pthread_condattr_destroy(&attr);
    }
    pthread_mutex_lock(&bt->lock);
    batch_queue *q = can_wait ? queue_get(bt, job->owner, job->key) : NULL;
    if (!q) { /* no batching (or no memory for a queue): the job runs alone, now */
        pthread_mutex_unlock(&bt->lock);
        if (can_wait) pthread_cond_destroy(&job->cond);
        return run_one(bt, job);
    }
    q->users++;
    *q->tail = job;
    q->tail = &job->next;
    q->waiting++;
    promote(bt, q); /* with a free slot and nobody gathering, the queue was empty: this job leads */
    if (q->gatherer && q->gatherer != job && q->waiting >= bt->cfg.max)
        pthread_cond_signal(&q->gatherer->cond); /* a leader in its window has a full batch */
    while (!job->leader && !job->done) pthread_cond_wait(&job->cond, &bt->lock);
    if (job->done) {
        queue_leave(bt, q);
        pthread_mutex_unlock(&bt->lock);
        pthread_cond_destroy(&job->cond);
        return job->size;
    }

    wp_batch_job *jobs[WP_BATCH_MAX_LIMIT];
    int n = gather(bt, q, job, jobs);
    promote(bt, q); /* more than max waited: another batch may start beside this one */
    pthread_mutex_unlock(&bt->lock);

    job->run(jobs, n);

    pthread_mutex_lock(&bt->lock);
    count(bt, n);
    q->leaders--;
    for (int i = 0; i < n; i++) {
        jobs[i]->size = n;
        jobs[i]->done = true;
        if (jobs[i] != job) pthread_cond_signal(&jobs[i]->cond);
    }
    promote(bt, q); /* what arrived while every slot ran: the next batch */
    int size = job->size;
    queue_leave(bt, q);
    pthread_mutex_unlock(&bt->lock);
    pthread_cond_destroy(&job->cond);
    return size;
}

int wp_batcher_hand(wp_batcher *bt, wp_batch_job *job) {
    if (bt->n_runners < 1 || atomic_load_explicit(&bt->stopping, memory_order_relaxed)) return -1;
    job->done = job->leader = false;
    job->size = 1;
    job->queue_us = 0; /* its queue is the caller's to time: from the hand-over to done */
    wp_batch_job *old = atomic_load_explicit(&bt->handed, memory_order_relaxed);
    do job->next = old;
    while (!atomic_compare_exchange_weak_explicit(&bt->handed, &old, job, memory_order_release, memory_order_relaxed));
    if (!old) sem_post(&bt->ready_sem); /* empty before: a runner may be asleep */
    return 0;
}

/* Everything handed so far, oldest first, each prepared (NULL when nothing waits); a job whose
 * prepare fails is done at once. */
static wp_batch_job *take_handed(wp_batcher *bt) {
    wp_batch_job *j = atomic_exchange_explicit(&bt->handed, NULL, memory_order_acquire), *fifo = NULL;
    while (j) {
        wp_batch_job *next = j->next;
        j->next = fifo;
        fifo = j;
        j = next;
    }
    for (wp_batch_job **pp = &fifo; *pp;) {
        j = *pp;
        if (!j->prepare || j->prepare(j)) {
            pp = &j->next;
            continue;
        }
        *pp = j->next;
        j->on_done(j);
    }
    return fifo;
}

/* Takes out of *list the first job and up to max - 1 more of its owner and key, in order. */
static int take_batch(wp_batcher *bt, wp_batch_job **list, wp_batch_job **jobs) {
    wp_batch_job *first = *list;
    int n = 0;
    for (wp_batch_job **pp = list; *pp && n < bt->cfg.max;) {
        wp_batch_job *j = *pp;
        if (j == first || (j->owner == first->owner && !strcmp(j->key, first->key))) {
            *pp = j->next;
            jobs[n++] = j;
        } else {
            pp = &j->next;
        }
    }
    return n;
}

/* Runs a batch of handed jobs and hands each its end (on_done, no lock held: its owner may free it). */
static void run_handed(wp_batcher *bt, wp_batch_job **jobs, int n) {
    jobs[0]->run(jobs, n);
    pthread_mutex_lock(&bt->lock);
    count(bt, n);
    pthread_mutex_unlock(&bt->lock);
    for (int i = 0; i < n; i++) jobs[i]->size = n;
    for (int i = 0; i < n; i++) jobs[i]->on_done(jobs[i]);
}

/* A runner: takes what was handed, runs it as batches of one owner and key, until the batcher closes
 * (a post that finds nothing handed, once stopping). */
static void *runner_main(void *arg) {
    wp_batcher *bt = arg;
    wp_batch_job *jobs[WP_BATCH_MAX_LIMIT];
    for (;;) {
        while (sem_wait(&bt->ready_sem) != 0) { /* EINTR */
        }
        if (!atomic_load_explicit(&bt->handed, memory_order_relaxed) && atomic_load(&bt->stopping)) return NULL;
        wp_batch_job *list = take_handed(bt);
        while (list) {
            int n = take_batch(bt, &list, jobs);
            run_handed(bt, jobs, n);
        }
    }
}

void wp_batcher_stats(wp_batcher *bt, wp_batch_stats *out) {
    pthread_mutex_lock(&bt->lock);
    out->batches = bt->batches;
    out->jobs = bt->jobs;
    memcpy(out->le, bt->le, sizeof out->le);
    out->waiting = 0;
    for (batch_queue *q = bt->queues; q; q = q->next) out->waiting += q->waiting;
    out->window_us = bt->cfg.window_us;
    out->max = bt->cfg.max;
    pthread_mutex_unlock(&bt->lock);
}
