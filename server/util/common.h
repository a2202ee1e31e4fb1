/* common.h — what every module shares: the error value (wp_err), clocks, small helpers.
 * Owns: nothing mutable. */
#ifndef WP_COMMON_H
#define WP_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* An error a caller can show a client: HTTP status, stable code, the field at fault, a message.
 * Filled once, where the fault is found. status 0 means "no error". */
typedef struct {
    int status;
    const char *code; /* stable, e.g. "bad_width"; static storage */
    char field[64];   /* JSON path of the field at fault, "" when none */
    char msg[256];
} wp_err;

/* Fills *e (if non-NULL) and returns -1, so callers can `return WP_FAIL(...)`. */
int wp_err_set(wp_err *e, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define WP_FAIL(e, st, c, f, ...) wp_err_set((e), (st), (c), (f), __VA_ARGS__)
void wp_err_clear(wp_err *e);

/* A number 0 .. 2^bits - 1 for the calling thread (bits 1..16), the same for its life, spread over
 * threads: the stripe of a counter that many threads write, so that they rarely write one cache line. */
unsigned wp_thread_slot(unsigned bits);

uint64_t wp_now_ns(void); /* CLOCK_MONOTONIC */
double wp_unix_now(void); /* CLOCK_REALTIME, in seconds */
static inline double wp_ms_since(uint64_t t0_ns) { return (double)(wp_now_ns() - t0_ns) / 1e6; }
static inline double wp_us_since(uint64_t t0_ns) { return (double)(wp_now_ns() - t0_ns) / 1e3; }
/* µs rounded to whole ns, as every clock difference above is (a difference of such figures is not, and
 * would print as 3.686999999999999 where 3.687 is meant). */
static inline double wp_us_round_ns(double us) { return (double)(int64_t)(us * 1e3 + (us < 0 ? -0.5 : 0.5)) / 1e3; }

/* 64 unguessable bits (getrandom; the clock, mixed, if the kernel has none to give): ids that one client
 * cannot guess to reach another's data. */
uint64_t wp_random_u64(void);

/* MemAvailable of /proc/meminfo in bytes (what the host can give without swapping); 0 when unknown. */
uint64_t wp_mem_available(void);

/* src into dst of cap bytes, cut to cap - 1 bytes, NUL-terminated (nothing when cap is 0); returns the
 * bytes copied. A copy, not snprintf("%s"): request paths use it (inline: no call into this file). */
static inline size_t wp_copy_cut(char *dst, size_t cap, const char *src) {
    if (!cap) return 0;
    const char *nul = (const char *)memchr(src, 0, cap - 1); /* the cast: C++ (nvcc) includes this too */
    const size_t n = nul ? (size_t)(nul - src) : cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
    return n;
}

/* Reads a whole file; returns malloc'd buffer (NUL-terminated) or NULL with errno set. */
char *wp_read_file(const char *path, size_t *len);

#define WP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
