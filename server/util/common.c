/* common.c — the error value, the monotonic clock, whole-file reads and the host's free memory, shared by
 * every module. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int wp_err_set(wp_err *e, int status, const char *code, const char *field, const char *fmt, ...) {
    if (!e) return -1;
    e->status = status;
    e->code = code;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

void wp_err_clear(wp_err *e) {
    if (e) memset(e, 0, sizeof *e);
}

/* Slots are handed out in the order threads first ask, so the first 2^bits threads to ask share none. */
unsigned wp_thread_slot(unsigned bits) {
    static atomic_uint next;            /* the module's own: the next slot to hand out */
    static _Thread_local unsigned mine; /* the thread's slot + 1; 0: none yet */
    if (!mine) mine = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) + 1;
    return (mine - 1) & ((1u << bits) - 1);
}

uint64_t wp_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

char *wp_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

uint64_t wp_mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

uint64_t wp_random_u64(void) {
    uint64_t r;
    if (getrandom(&r, sizeof r, 0) == (ssize_t)sizeof r) return r; /* blocks only until the pool is first ready */
    r = wp_now_ns() ^ (uint64_t)clock();
    r ^= r >> 31, r *= 0xBF58476D1CE4E5B9ull, r ^= r >> 27;
    return r;
}

double wp_unix_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
