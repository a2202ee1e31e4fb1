/* resident_box.c — a resident kernel's mailbox, the host's side (resident_box.h).
 * Owns: nothing but whether the CPU has clflushopt, asked once (functions over the caller's box). */
#include "resident_box.h"

#include <stdint.h>
#include <string.h>

typedef struct {
    unsigned w[4];
} box_line;

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

/* One 16-byte store or load: a movdqa of an aligned line, written as such (asm), so no compiler can
 * split, merge or drop it; whole on x86-64 with AVX and every CPU since. */
static void line_put(void *box, int i, unsigned a, unsigned b, unsigned c, unsigned d) {
    const __m128i v = _mm_set_epi32((int)d, (int)c, (int)b, (int)a);
    __asm__ volatile("movdqa %1, %0" : "=m"(*(__m128i *)((char *)box + (size_t)i * 16)) : "x"(v) : "memory");
}
static box_line line_get(const void *box, int i) {
    __m128i v;
    __asm__ volatile("movdqa %1, %0"
                     : "=x"(v)
                     : "m"(*(const __m128i *)((const char *)box + (size_t)i * 16))
                     : "memory");
    box_line l;
    memcpy(l.w, &v, sizeof l.w);
    return l;
}

/* Whether the CPU has clflushopt (CPUID leaf 7, EBX bit 23), asked once: 1 no, 2 yes. */
static bool has_clflushopt(void) {
    static atomic_int known; /* 0 until asked: two first callers both ask, and agree */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        k = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23)) ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}
__attribute__((target("clflushopt"))) static void flush_opt(uintptr_t from, uintptr_t to) {
    for (uintptr_t p = from; p < to; p += 64) _mm_clflushopt((void *)p);
    _mm_sfence(); /* they go out of order among themselves: done before the post returns */
}

/* Lines [first, first + n) out of this CPU's caches, after the stores to them. The resident watches its
 * mailbox over the bus without a pause; while the posting core holds the lines, each of those reads
 * takes them from that core's cache, and the host's own work beside it slowed by about a microsecond a
 * request (H200 host: a job's parse and receive). Out of the caches, the device reads them from memory.
 * clflushopt where the CPU has it (the flushes overlap), else clflush (one after another). */
static void lines_flush(void *box, int first, int n) {
    const uintptr_t from = ((uintptr_t)box + (size_t)first * 16) & ~(uintptr_t)63;
    const uintptr_t to = (uintptr_t)box + (size_t)(first + n) * 16;
    if (has_clflushopt()) {
        flush_opt(from, to);
        return;
    }
    for (uintptr_t p = from; p < to; p += 64) _mm_clflush((const void *)p);
}

bool wp_resident_box_usable(void) { return true; }
#else
static void lines_flush(void *box, int first, int n) { (void)box, (void)first, (void)n; }
static void line_put(void *box, int i, unsigned a, unsigned b, unsigned c, unsigned d) {
    (void)box, (void)i, (void)a, (void)b, (void)c, (void)d;
}
static box_line line_get(const void *box, int i) {
    (void)box, (void)i;
    return (box_line){{0, 0, 0, 0}};
}
bool wp_resident_box_usable(void) { return false; }
#endif

static unsigned lo(uint64_t x) { return (unsigned)x; }
static unsigned hi(uint64_t x) { return (unsigned)(x >> 32); }

bool wp_resident_box_fits(const wp_warp_job *job) {
    if (job->n != WP_RESIDENT_LANES || job->elems < 1 || job->elems > WP_MAX_ELEMS) return false;
    for (int l = 0; job->active && l < job->n; l++)
        if (!job->active[l]) return false;
    return true;
}

unsigned wp_resident_box_next(unsigned seq) {
    seq++;
    return seq == 0 || seq == WP_RESIDENT_STOP ? 1 : seq;
}

void wp_resident_box_post(void *box, const wp_warp_job *job, unsigned seq) {
    const int n = job->n, e = job->elems;
    unsigned active = 0;
    for (int l = 0; l < n; l++) active |= (job->active ? job->active[l] != 0 : 1u) << l;
    for (int i = 0; i < n * e; i++) {
        const uint64_t v = job->in ? job->in[i] : 0;
        line_put(box, WP_RES_IN + i, seq, job->arg ? (unsigned)job->arg[i / e] : 0, lo(v), hi(v));
    }
    line_put(box, WP_RES_HEAD + 1, seq, lo(job->pred_a), hi(job->pred_a), (unsigned)job->first);
    line_put(box, WP_RES_HEAD + 2, seq, lo(job->pred_b), hi(job->pred_b), (unsigned)job->second);
    const bool short_head = !job->pred_a && !job->pred_b && job->first >= INT16_MIN && job->first <= INT16_MAX &&
                            job->second >= INT16_MIN && job->second <= INT16_MAX;
    const unsigned shape = (unsigned)n | (unsigned)e << 8 | (unsigned)job->pred_kind << 16;
    if (short_head)
        line_put(box, WP_RES_HEAD, seq, shape | WP_RES_SHORT, active,
                 (unsigned)(uint16_t)job->first | (unsigned)(uint16_t)job->second << 16);
    else
        line_put(box, WP_RES_HEAD, seq, shape, active, 0);
    /* what the watch reads at every look: the header's lines and each lane's first input line */
    lines_flush(box, WP_RES_HEAD, WP_RES_IN + (n * e < WP_RES_WATCH_IN ? n * e : WP_RES_WATCH_IN));
}

int wp_resident_box_poll(const void *box, unsigned seq, int n, int elems) {
    bool all = true;
    for (int i = n * elems - 1; i >= 0 && all; i--) all = line_get(box, WP_RES_OUT + i).w[0] == seq;
    if (all) return WP_RESIDENT_DONE;
    return wp_resident_box_left(box) ? WP_RESIDENT_GONE : WP_RESIDENT_WAIT;
}

void wp_resident_box_read(const void *box, int n, int elems, wp_warp_result *res) {
    for (int i = 0; i < n * elems; i++) {
        const box_line l = line_get(box, WP_RES_OUT + i);
        res->out[i] = (uint64_t)l.w[2] | (uint64_t)l.w[3] << 32;
        if (i % elems == 0) res->src[i / elems] = (int32_t)l.w[1];
    }
}

bool wp_resident_box_image_fits(size_t image_len, size_t first_at, unsigned jobs, size_t answer_at, size_t answer_len) {
    return image_len <= WP_DRES_IMAGE_MAX && answer_len <= (size_t)WP_DRES_OUT_LINES * WP_DRES_LINE_BYTES &&
           first_at <= 0xffff && jobs >= 1 && jobs <= 0xffff && answer_at < WP_DRES_ANSWER_AT_MAX;
}

static size_t lines_of(size_t bytes) { return (bytes + WP_DRES_LINE_BYTES - 1) / WP_DRES_LINE_BYTES; }

/* The image's word at byte at (zeros past len): one load but for a last partial word. */
static uint64_t image_word(const unsigned char *b, size_t at, size_t len) {
    uint64_t w = 0;
    if (at + sizeof w <= len)
        memcpy(&w, b + at, sizeof w);
    else
        memcpy(&w, b + at, len - at);
    return w;
}

/* The words of image[0, len) that are not zero, as lines from WP_DRES_IN; false (the lines past the
 * mailbox not written) when they are more than it holds. */
static bool put_words(void *box, const unsigned char *b, size_t len, unsigned seq, unsigned *words) {
    unsigned n = 0;
    for (size_t at = 0; at < len; at += WP_DRES_WORD_BYTES) {
        const uint64_t w = image_word(b, at, len);
        if (!w) continue;
        if (n == WP_DRES_IN_LINES) return false;
        line_put(box, WP_DRES_IN + (int)n++, seq, (unsigned)at, lo(w), hi(w));
    }
    *words = n;
    return true;
}

bool wp_resident_box_post_image(void *box, const void *image, size_t image_len, size_t first_at, unsigned jobs,
                                size_t answer_at, size_t answer_len, unsigned seq) {
    unsigned words = 0;
    if (!wp_resident_box_image_fits(image_len, first_at, jobs, answer_at, answer_len)) return false;
    const bool put = put_words(box, image, image_len, seq, &words);
    if (put)
        line_put(box, WP_DRES_HEAD, seq, words | jobs << 16, (unsigned)first_at | (unsigned)image_len << 16,
                 (unsigned)answer_at | (unsigned)answer_len << 20);
    lines_flush(box, WP_DRES_HEAD, WP_DRES_WATCH_LINES); /* what the watch reads at every look */
    return put;
}

int wp_resident_box_poll_image(const void *box, unsigned seq, size_t answer_len) {
    bool all = true;
    for (int i = (int)lines_of(answer_len) - 1; i >= 0 && all; i--) all = line_get(box, WP_RES_OUT + i).w[0] == seq;
    if (all) return WP_RESIDENT_DONE;
    return wp_resident_box_left(box) ? WP_RESIDENT_GONE : WP_RESIDENT_WAIT;
}

void wp_resident_box_read_image(const void *box, size_t answer_len, void *dst) {
    unsigned char *d = dst;
    for (size_t i = 0, at = 0; at < answer_len; i++, at += WP_DRES_LINE_BYTES) {
        const box_line l = line_get(box, WP_RES_OUT + (int)i);
        const size_t left = answer_len - at;
        memcpy(d + at, &l.w[1], left < WP_DRES_LINE_BYTES ? left : WP_DRES_LINE_BYTES);
    }
}

void wp_resident_box_stop(void *box) { line_put(box, WP_RES_HEAD, WP_RESIDENT_STOP, 0, 0, 0); }

bool wp_resident_box_left(const void *box) { return line_get(box, WP_RES_STATUS).w[1] == WP_RESIDENT_EXITED; }

void wp_resident_box_clear(void *box) { line_put(box, WP_RES_STATUS, 0, 0, 0, 0); }
