/* mock_resident.c — resident kernels in the stand-in driver: a launch of a warp kernel with
 * p.resident set, or of a batched data kernel with p.reserved WP_DATA_RESIDENT, starts a thread that
 * plays the kernel on its mailbox (kernels/wp_abi.h): it answers each warp job with every lane's value
 * unchanged and src -1, and each data job with the asked region of its image as it came (what the
 * stand-in's plain launch leaves there: plumbing, not results), leaves when told,
 * after resident_idle_us without a job or past resident_life_us, and writes the status line. Events
 * recorded on its stream are not done until it has left; a stream or context wait waits for it.
 * MOCKCUDA_RESIDENT=silent: a resident launch ends at once without a word (a kernel that does not
 * serve as one); =deaf: the resident takes no job and leaves only when told (never scheduled, or hung).
 * Owns: the threads and the event table. */
#define _POSIX_C_SOURCE 200809L
#include "mock_resident.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../kernels/wp_abi.h"
#include "resident_lines.h"

#define MOCK_RESIDENTS 16
#define MOCK_EVENTS 64

typedef struct {
    uintptr_t stream; /* 0: a free entry */
    atomic_bool running;
    atomic_bool kill; /* its context went: stop, writing nothing */
    unsigned *box;    /* the mailbox, 4 words a line */
    bool data;        /* a batched data kernel's (its jobs are images) */
    unsigned idle_us, life_us;
    pthread_t thread;
} resident;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t left = PTHREAD_COND_INITIALIZER;
static resident residents[MOCK_RESIDENTS];
static struct {
    uintptr_t event;
    resident *r;
} events[MOCK_EVENTS];

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void answer(unsigned *box, unsigned seq) {
    const unsigned head = res_word(box, WP_RES_HEAD, 1);
    const int n = (int)(head & 0xffu), elems = (int)((head >> 8) & 0xffu);
    for (int i = 0; i < n * elems && n <= WP_RESIDENT_LANES && elems <= WP_MAX_ELEMS; i++)
        res_put_line(box, WP_RES_OUT + i, seq, 0xffffffffu, res_word(box, WP_RES_IN + i, 2),
                     res_word(box, WP_RES_IN + i, 3));
}

/* A data job: its image's words into a zeroed copy, the asked region of the copy back (zeros past the
 * image). */
static void answer_image(unsigned *box, unsigned seq) {
    unsigned char img[WP_DRES_IMAGE_MAX + WP_DRES_OUT_LINES * WP_DRES_LINE_BYTES];
    res_image_words(box, img, sizeof img);
    const unsigned at = WP_DRES_ANSWER_AT(res_word(box, WP_DRES_HEAD, 3)),
                   len = WP_DRES_ANSWER_LEN(res_word(box, WP_DRES_HEAD, 3));
    for (unsigned i = 0; (size_t)i * WP_DRES_LINE_BYTES < len && i < WP_DRES_OUT_LINES; i++) {
        unsigned w[3] = {0, 0, 0};
        const size_t from = (size_t)at + (size_t)i * WP_DRES_LINE_BYTES;
        if (from + sizeof w <= sizeof img) memcpy(w, img + from, sizeof w);
        res_put_line(box, WP_RES_OUT + (int)i, seq, w[0], w[1], w[2]);
    }
}

static void *resident_main(void *arg) {
    resident *r = arg;
    const char *mode = getenv("MOCKCUDA_RESIDENT");
    const bool deaf = mode && !strcmp(mode, "deaf");
    const uint64_t born = now_us();
    uint64_t idle_from = born;
    unsigned last = 0;
    for (;;) {
        if (atomic_load(&r->kill)) goto killed;
        const unsigned seq = res_word(r->box, WP_RES_HEAD, 0);
        if (seq == WP_RESIDENT_STOP) break;
        if (seq != last && seq != 0 && !deaf) {
            if (r->data)
                answer_image(r->box, seq);
            else
                answer(r->box, seq);
            last = seq;
            idle_from = now_us();
            continue;
        }
        const uint64_t t = now_us();
        if (!deaf && (t - idle_from > r->idle_us || t - born > r->life_us)) break;
        struct timespec ts = {0, 20000}; /* 20 µs between looks: the machine may have few cores */
        nanosleep(&ts, NULL);
    }
    res_put_line(r->box, WP_RES_STATUS, last, WP_RESIDENT_EXITED, 0, 0);
killed:
    pthread_mutex_lock(&mu);
    atomic_store(&r->running, false);
    pthread_cond_broadcast(&left);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static resident *running_on(uintptr_t stream) {
    for (int i = 0; i < MOCK_RESIDENTS; i++)
        if (residents[i].stream == stream && atomic_load(&residents[i].running)) return &residents[i];
    return NULL;
}

void mock_resident_launch(uintptr_t stream, const void *params, bool data) {
    wp_warp_params p;
    memset(&p, 0, sizeof p);
    if (data) { /* the same fields, as wp_abi.h lays a data resident's out */
        wp_data_params d;
        memcpy(&d, params, sizeof d);
        if (d.reserved != WP_DATA_RESIDENT) return;
        p.resident = d.in;
        p.resident_idle_us = (unsigned)d.n;
        p.resident_life_us = (unsigned)d.groups;
    } else {
        memcpy(&p, params, sizeof p);
    }
    const char *mode = getenv("MOCKCUDA_RESIDENT");
    if (!p.resident || (mode && !strcmp(mode, "silent"))) return;
    pthread_mutex_lock(&mu);
    resident *r = NULL;
    for (int i = 0; i < MOCK_RESIDENTS && !r; i++)
        if (!atomic_load(&residents[i].running)) r = &residents[i];
    if (r) {
        if (r->stream) pthread_join(r->thread, NULL); /* a thread that left: reap it */
        r->stream = stream;
        r->box = (unsigned *)(uintptr_t)p.resident;
        r->data = data;
        r->idle_us = p.resident_idle_us;
        r->life_us = p.resident_life_us;
        atomic_store(&r->kill, false);
        atomic_store(&r->running, true);
        if (pthread_create(&r->thread, NULL, resident_main, r) != 0) {
            atomic_store(&r->running, false);
            r->stream = 0;
        }
    }
    pthread_mutex_unlock(&mu);
}

void mock_resident_event(uintptr_t event, uintptr_t stream) {
    pthread_mutex_lock(&mu);
    int free_slot = -1;
    for (int i = 0; i < MOCK_EVENTS; i++) {
        if (events[i].event == event) events[i].event = 0; /* recorded again: the old stand is gone */
        if (!events[i].event && free_slot < 0) free_slot = i;
    }
    resident *r = running_on(stream);
    if (r && free_slot >= 0) events[free_slot].event = event, events[free_slot].r = r;
    pthread_mutex_unlock(&mu);
}

static bool pending_locked(uintptr_t event, uintptr_t stream) {
    if (event) {
        for (int i = 0; i < MOCK_EVENTS; i++)
            if (events[i].event == event) return atomic_load(&events[i].r->running);
        return false;
    }
    for (int i = 0; i < MOCK_RESIDENTS; i++)
        if (atomic_load(&residents[i].running) && (!stream || residents[i].stream == stream)) return true;
    return false;
}

bool mock_resident_pending(uintptr_t event, uintptr_t stream, bool wait) {
    pthread_mutex_lock(&mu);
    bool p = pending_locked(event, stream);
    while (wait && p) {
        pthread_cond_wait(&left, &mu);
        p = pending_locked(event, stream);
    }
    pthread_mutex_unlock(&mu);
    return p;
}

void mock_resident_kill_all(void) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MOCK_RESIDENTS; i++) atomic_store(&residents[i].kill, true);
    while (pending_locked(0, 0)) pthread_cond_wait(&left, &mu);
    pthread_mutex_unlock(&mu);
}
