/* test_resident_box.c — server/backend/resident_box.c, the host's side of a resident kernel's
 * mailbox: a data kernel's image as lines and its answer read back, which jobs fit, the sequence numbers, a job's lines
 * as kernels/wp_abi.h lays them out, and whole round trips against a thread that plays the kernel as
 * templates/wp_resident.cuh does (takes a job when its header is new, answers every line, leaves on STOP or when told,
 * writing the status line): answers read back exactly, a partial answer not taken as done, a kernel that left without
 * the job reported gone, the status line cleared. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/resident_box.h"
#include "t.h"
#include "tests/mockcuda/resident_lines.h"

/* The kernel's part: out = ~in on active lanes (poison elsewhere), src = lane ^ 1 (-1 elsewhere). */
typedef struct {
    unsigned *box;
    atomic_bool leave; /* leave at the next look without taking a job (an idle kernel's timer) */
    atomic_int jobs;
} device;

/* Lines in a shuffled order, the thread giving way between some: the host must wait for all of them. */
static void answer(unsigned *box, unsigned seq) {
    const unsigned h = res_word(box, WP_RES_HEAD, 1), active = res_word(box, WP_RES_HEAD, 2);
    const int n = (int)(h & 0xffu), e = (int)((h >> 8) & 0xffu);
    int order[32 * WP_MAX_ELEMS];
    for (int i = 0; i < n * e; i++) order[i] = i;
    for (int i = n * e - 1; i > 0; i--) {
        const int j = (int)((seq * 2654435761u + (unsigned)i * 40503u) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < n * e; k++) {
        const int i = order[k];
        if (k % 5 == 4) sched_yield();
        const int lane = i / e;
        const bool on = (active >> lane) & 1u;
        const uint64_t in = (uint64_t)res_word(box, WP_RES_IN + i, 2) | (uint64_t)res_word(box, WP_RES_IN + i, 3) << 32;
        const uint64_t out = on ? ~in : WP_WARP_POISON;
        res_put_line(box, WP_RES_OUT + i, seq, on ? (unsigned)(lane ^ 1) : 0xffffffffu, (unsigned)out,
                     (unsigned)(out >> 32));
    }
}

static void *device_main(void *arg) {
    device *d = arg;
    unsigned last = 0;
    for (;;) {
        const unsigned seq = res_word(d->box, WP_RES_HEAD, 0);
        if (seq == WP_RESIDENT_STOP || atomic_load(&d->leave)) break;
        if (seq != last && seq != 0) {
            answer(d->box, seq);
            last = seq;
            atomic_fetch_add(&d->jobs, 1);
        }
        sched_yield();
    }
    res_put_line(d->box, WP_RES_STATUS, last, WP_RESIDENT_EXITED, 0, 0);
    return NULL;
}

static unsigned *box_new(void) {
    unsigned *b = aligned_alloc(64, WP_RESIDENT_BOX_BYTES);
    memset(b, 0, WP_RESIDENT_BOX_BYTES);
    return b;
}

static void test_fits_and_numbers(void) {
    T_CASE("which jobs fit; sequence numbers");
    CHECK(wp_resident_box_usable());
    const int ns[] = {0, 1, 31, 32, 33}, es[] = {0, 1, WP_MAX_ELEMS, WP_MAX_ELEMS + 1};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) {
            wp_warp_job job = {.n = ns[i], .elems = es[j]};
            CHECKF(wp_resident_box_fits(&job) == (i == 3 && (j == 1 || j == 2)), "n %d elems %d", ns[i], es[j]);
        }
    uint8_t active[32];
    memset(active, 1, sizeof active);
    wp_warp_job all = {.n = 32, .elems = 1, .active = active};
    CHECK(wp_resident_box_fits(&all));
    active[17] = 0; /* a lane that would wait in the loop while the others name it */
    CHECK(!wp_resident_box_fits(&all));
    CHECK(wp_resident_box_next(0) == 1 && wp_resident_box_next(5) == 6);
    CHECK(wp_resident_box_next(WP_RESIDENT_STOP - 1) == 1 && wp_resident_box_next(WP_RESIDENT_STOP) == 1);
    CHECK(WP_RES_STATUS * 16 % 64 == 0 && WP_RES_OUT * 16 % 64 == 0 && WP_RES_OUT > WP_RES_IN + 32 * WP_MAX_ELEMS);
}

static void test_post_lines(void) {
    T_CASE("a job's lines");
    unsigned *box = box_new();
    uint64_t in[6] = {1, 2, 0x1122334455667788ull, 4, 5, 6};
    int32_t arg[3] = {-1, 7, 9};
    uint8_t active[3] = {1, 0, 1};
    wp_warp_job job = {.n = 3,
                       .elems = 2,
                       .in = in,
                       .arg = arg,
                       .active = active,
                       .pred_kind = 5,
                       .pred_a = 0xa0000000bull,
                       .pred_b = 0xb0000000cull,
                       .first = 1,
                       .second = 0};
    wp_resident_box_post(box, &job, 42);
    CHECK(res_word(box, 0, 0) == 42 && res_word(box, 0, 1) == (3u | 2u << 8 | 5u << 16) && res_word(box, 0, 2) == 5u);
    CHECK(res_word(box, 1, 0) == 42 && res_word(box, 1, 1) == 0xbu && res_word(box, 1, 2) == 0xau &&
          res_word(box, 1, 3) == 1);
    CHECK(res_word(box, 2, 0) == 42 && res_word(box, 2, 1) == 0xcu && res_word(box, 2, 2) == 0xbu &&
          res_word(box, 2, 3) == 0);
    CHECK(res_word(box, WP_RES_IN + 2, 0) == 42 && res_word(box, WP_RES_IN + 2, 1) == 7u);
    CHECK(res_word(box, WP_RES_IN + 2, 2) == 0x55667788u && res_word(box, WP_RES_IN + 2, 3) == 0x11223344u);
    CHECK(res_word(box, WP_RES_IN + 5, 1) == 9u && res_word(box, WP_RES_IN + 0, 1) == 0xffffffffu);
    wp_warp_job bare = {.n = 32, .elems = 1}; /* no arrays: zeros, every lane active */
    wp_resident_box_post(box, &bare, 43);
    CHECK(res_word(box, 0, 2) == 0xffffffffu && res_word(box, WP_RES_IN + 31, 0) == 43 &&
          res_word(box, WP_RES_IN + 31, 2) == 0);
    /* no constants, first and second in 16 bits: the header says them (WP_RES_SHORT), as int16 */
    CHECK(res_word(box, 0, 1) == (32u | 1u << 8 | WP_RES_SHORT) && res_word(box, 0, 3) == 0);
    wp_warp_job swap = {.n = 32, .elems = 4, .pred_kind = 3, .first = -2, .second = 32767};
    wp_resident_box_post(box, &swap, 44);
    CHECK(res_word(box, 0, 1) == (32u | 4u << 8 | 3u << 16 | WP_RES_SHORT) &&
          res_word(box, 0, 3) == (0xfffeu | 0x7fffu << 16) && res_word(box, 1, 0) == 44 && res_word(box, 2, 0) == 44);
    swap.second = 32768; /* past int16: the long header, first and second in their lines */
    wp_resident_box_post(box, &swap, 45);
    CHECK(res_word(box, 0, 1) == (32u | 4u << 8 | 3u << 16) && res_word(box, 0, 3) == 0 &&
          res_word(box, 1, 3) == (unsigned)-2 && res_word(box, 2, 3) == 32768u);
    swap.second = 0, swap.pred_b = 1; /* a constant: the long header */
    wp_resident_box_post(box, &swap, 46);
    CHECK(!(res_word(box, 0, 1) & WP_RES_SHORT) && res_word(box, 2, 1) == 1);
    free(box);
}

static void test_round_trips(void) {
    T_CASE("round trips through a kernel thread");
    device d = {.box = box_new()};
    pthread_t th;
    pthread_create(&th, NULL, device_main, &d);
    unsigned seq = 0;
    const int ns[] = {1, 7, 32}, es[] = {1, 3, WP_MAX_ELEMS};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            const int n = ns[a], e = es[b];
            uint64_t in[32 * WP_MAX_ELEMS], out[32 * WP_MAX_ELEMS];
            int32_t src[32];
            uint8_t active[32];
            for (int i = 0; i < n * e; i++) in[i] = 0x0123456789abcdefull * (uint64_t)(i + 1);
            for (int l = 0; l < n; l++) active[l] = l % 3 != 1;
            wp_warp_job job = {.n = n, .elems = e, .in = in, .active = active};
            seq = wp_resident_box_next(seq);
            wp_resident_box_post(d.box, &job, seq);
            int st;
            while ((st = wp_resident_box_poll(d.box, seq, n, e)) == WP_RESIDENT_WAIT) sched_yield();
            CHECKF(st == WP_RESIDENT_DONE, "n %d elems %d: %d", n, e, st);
            wp_resident_box_read(d.box, n, e, &(wp_warp_result){.out = out, .src = src});
            int bad = 0;
            for (int i = 0; i < n * e; i++) bad += out[i] != (active[i / e] ? ~in[i] : WP_WARP_POISON);
            for (int l = 0; l < n; l++) bad += src[l] != (active[l] ? (l ^ 1) : -1);
            CHECKF(bad == 0, "n %d elems %d: %d wrong", n, e, bad);
        }
    CHECK(atomic_load(&d.jobs) == 9);
    /* an answer of which one line still carries the last job's number is not done */
    uint64_t in[4] = {1, 2, 3, 4};
    wp_warp_job job = {.n = 4, .elems = 1, .in = in};
    const unsigned before = atomic_load(&d.jobs);
    seq = wp_resident_box_next(seq);
    wp_resident_box_post(d.box, &job, seq);
    while (atomic_load(&d.jobs) == (int)before) sched_yield();
    res_put_line(d.box, WP_RES_OUT + 2, seq - 1, 0, 0, 0);
    CHECK(wp_resident_box_poll(d.box, seq, 4, 1) == WP_RESIDENT_WAIT);
    CHECK(wp_resident_box_poll(d.box, seq, 2, 1) == WP_RESIDENT_DONE);
    /* stop: the kernel leaves and says so */
    CHECK(!wp_resident_box_left(d.box));
    wp_resident_box_stop(d.box);
    pthread_join(th, NULL);
    CHECK(wp_resident_box_left(d.box) && res_word(d.box, WP_RES_STATUS, 0) == seq);
    wp_resident_box_clear(d.box);
    CHECK(!wp_resident_box_left(d.box));
    free(d.box);
}

static void test_gone(void) {
    T_CASE("a kernel that left without the job");
    device d = {.box = box_new()};
    atomic_store(&d.leave, true);
    pthread_t th;
    pthread_create(&th, NULL, device_main, &d);
    pthread_join(th, NULL); /* it left at its first look, taking nothing */
    uint64_t in[2] = {5, 6};
    wp_warp_job job = {.n = 2, .elems = 1, .in = in};
    wp_resident_box_post(d.box, &job, 1);
    CHECK(wp_resident_box_poll(d.box, 1, 2, 1) == WP_RESIDENT_GONE && atomic_load(&d.jobs) == 0);
    /* ... but an answer that is all there counts first, whatever the status line says */
    answer(d.box, 1);
    CHECK(wp_resident_box_poll(d.box, 1, 2, 1) == WP_RESIDENT_DONE);
    free(d.box);
}

/* The data kernel's part: the image's words into a zeroed copy, region [at, at + len) answered as each
 * byte plus one, the lines in reverse order (the host must wait for the first). */
static void answer_image(unsigned *box, unsigned seq, unsigned char *copy, size_t cap) {
    res_image_words(box, copy, cap);
    const unsigned at = WP_DRES_ANSWER_AT(res_word(box, WP_DRES_HEAD, 3)),
                   len = WP_DRES_ANSWER_LEN(res_word(box, WP_DRES_HEAD, 3));
    for (int i = (int)((len + WP_DRES_LINE_BYTES - 1) / WP_DRES_LINE_BYTES) - 1; i >= 0; i--) {
        unsigned char b[WP_DRES_LINE_BYTES];
        for (int k = 0; k < WP_DRES_LINE_BYTES; k++)
            b[k] = (unsigned char)(copy[at + (unsigned)i * 12 + (unsigned)k] + 1);
        unsigned w[3];
        memcpy(w, b, sizeof w);
        res_put_line(box, WP_RES_OUT + i, seq, w[0], w[1], w[2]);
    }
}

/* An image of len bytes: runs of zeros (whole words and parts of words) between bytes that are not. */
static void fill_image(unsigned char *image, size_t len) {
    for (size_t i = 0; i < len; i++) image[i] = (i / 40) % 3 == 1 || i % 13 == 5 ? 0 : (unsigned char)(i * 7 + 3);
}

static unsigned words_of(const unsigned char *image, size_t len) {
    unsigned n = 0;
    for (size_t at = 0; at < len; at += 8) {
        bool any = false;
        for (size_t k = at; k < at + 8 && k < len; k++) any |= image[k] != 0;
        n += any;
    }
    return n;
}

static void test_images(void) {
    T_CASE("a data kernel's image: fits, its words sent, answer");
    const size_t out_cap = (size_t)WP_DRES_OUT_LINES * WP_DRES_LINE_BYTES;
    CHECK(wp_resident_box_image_fits(WP_DRES_IMAGE_MAX, 0xffff, 0xffff, WP_DRES_ANSWER_AT_MAX - 1, out_cap) &&
          !wp_resident_box_image_fits(WP_DRES_IMAGE_MAX + 1, 0, 1, 0, 0) &&
          !wp_resident_box_image_fits(0, 0, 1, 0, out_cap + 1));
    /* every number the packed header cannot say is refused here, before the engine builds a post */
    CHECK(!wp_resident_box_image_fits(64, 0x10000, 1, 0, 8) && !wp_resident_box_image_fits(64, 0, 0x10000, 0, 8) &&
          !wp_resident_box_image_fits(64, 0, 0, 0, 8) && /* no job: the kernel's take refuses it too */
          !wp_resident_box_image_fits(64, 0, 1, WP_DRES_ANSWER_AT_MAX, 8));
    CHECK(WP_DRES_IN + WP_DRES_IN_LINES == WP_RES_STATUS && WP_RES_OUT + WP_DRES_OUT_LINES == WP_RES_LINES);
    unsigned *box = box_new();
    static unsigned char image[WP_DRES_IMAGE_MAX + 16], copy[sizeof image];
    const size_t len = 1003, at = 512, answer_len = 301; /* neither a whole number of lines nor of words */
    fill_image(image, len);
    image[1000] = 0x11, image[1001] = 0, image[1002] = 0x33; /* the last word, partly zero and partly past len */
    const unsigned words = words_of(image, len);
    CHECK(words > 20 && words < len / 8); /* some words left out, some partly zero */
    CHECK(wp_resident_box_post_image(box, image, len, 256, 1, at, answer_len, 9));
    CHECK(res_word(box, WP_DRES_HEAD, 0) == 9 && res_word(box, WP_DRES_HEAD, 1) == (words | 1u << 16) &&
          res_word(box, WP_DRES_HEAD, 2) == (256u | (unsigned)len << 16) &&
          res_word(box, WP_DRES_HEAD, 3) == ((unsigned)at | (unsigned)answer_len << 20));
    bool tagged = true, rising = true;
    for (unsigned i = 0; i < words; i++) {
        tagged &= res_word(box, WP_DRES_IN + (int)i, 0) == 9;
        rising &= i == 0 || res_word(box, WP_DRES_IN + (int)i, 1) > res_word(box, WP_DRES_IN + (int)i - 1, 1);
    }
    CHECK(tagged && rising);
    const unsigned last_off = res_word(box, WP_DRES_IN + (int)words - 1, 1); /* the partial last word: 3 bytes */
    CHECK(last_off == 1000 &&
          res_word(box, WP_DRES_IN + (int)words - 1, 2) ==
              (unsigned)(image[1000] | image[1001] << 8 | image[1002] << 16) &&
          res_word(box, WP_DRES_IN + (int)words - 1, 3) == 0);
    CHECK(wp_resident_box_poll_image(box, 9, answer_len) == WP_RESIDENT_WAIT);
    answer_image(box, 9, copy, sizeof copy);
    CHECK(!memcmp(copy, image, len));          /* the words and the zeros rebuild the image */
    res_put_line(box, WP_RES_OUT, 8, 0, 0, 0); /* the first line still an older job's: not done */
    CHECK(wp_resident_box_poll_image(box, 9, answer_len) == WP_RESIDENT_WAIT);
    answer_image(box, 9, copy, sizeof copy);
    CHECK(wp_resident_box_poll_image(box, 9, answer_len) == WP_RESIDENT_DONE);
    unsigned char got[WP_DRES_OUT_LINES * WP_DRES_LINE_BYTES + 1];
    memset(got, 0xee, sizeof got);
    wp_resident_box_read_image(box, answer_len, got);
    bool same = true;
    for (size_t i = 0; i < answer_len; i++) same &= got[i] == (unsigned char)(copy[at + i] + 1);
    CHECK(same && got[answer_len] == 0xee); /* nothing past the answer written */
    res_put_line(box, WP_RES_STATUS, 9, WP_RESIDENT_EXITED, 0, 0);
    CHECK(wp_resident_box_post_image(box, image, len, 256, 1, at, answer_len, 10));
    CHECK(wp_resident_box_poll_image(box, 10, answer_len) == WP_RESIDENT_GONE);

    T_CASE("a data kernel's image: too many words for the mailbox, too long, or a header out of range, is not posted");
    const size_t answer_max = (size_t)WP_DRES_OUT_LINES * WP_DRES_LINE_BYTES;
    CHECK(wp_resident_box_post_image(box, image, 64, 0xffff, 0xffff, WP_DRES_ANSWER_AT_MAX - 1, answer_max, 20) &&
          res_word(box, WP_DRES_HEAD, 1) >> 16 == 0xffff && (res_word(box, WP_DRES_HEAD, 2) & 0xffff) == 0xffff &&
          (res_word(box, WP_DRES_HEAD, 3) & (WP_DRES_ANSWER_AT_MAX - 1)) == WP_DRES_ANSWER_AT_MAX - 1 &&
          res_word(box, WP_DRES_HEAD, 3) >> 20 == answer_max);
    CHECK(!wp_resident_box_post_image(box, image, 64, 0x10000, 1, 0, 4, 21) &&
          !wp_resident_box_post_image(box, image, 64, 0, 0x10000, 0, 4, 21) &&
          !wp_resident_box_post_image(box, image, 64, 0, 1, WP_DRES_ANSWER_AT_MAX, 4, 21) &&
          !wp_resident_box_post_image(box, image, 64, 0, 1, 0, answer_max + 1, 21));
    CHECK(res_word(box, WP_DRES_HEAD, 0) == 20);
    const size_t dense = (size_t)(WP_DRES_IN_LINES + 1) * 8;
    memset(image, 0x5a, dense);
    CHECK(!wp_resident_box_post_image(box, image, dense, 0, 1, 0, 4, 11));
    CHECK(res_word(box, WP_DRES_HEAD, 0) == 20);                              /* no header: the kernel takes nothing */
    CHECK(wp_resident_box_post_image(box, image, dense - 8, 0, 1, 0, 4, 11)); /* one word fewer: fits */
    CHECK((res_word(box, WP_DRES_HEAD, 1) & 0xffff) == WP_DRES_IN_LINES);
    memset(image, 0, sizeof image);
    image[WP_DRES_IMAGE_MAX - 1] = 1; /* sparse, but longer than the block zeroes */
    CHECK(wp_resident_box_post_image(box, image, WP_DRES_IMAGE_MAX, 0, 1, 0, 4, 12) &&
          !wp_resident_box_post_image(box, image, WP_DRES_IMAGE_MAX + 1, 0, 1, 0, 4, 13));
    free(box);
}

int main(void) {
    test_fits_and_numbers();
    test_images();
    test_post_lines();
    test_round_trips();
    test_gone();
    return t_done("resident_box");
}
