/* resident_lines.h — the device's side of a resident warp kernel's mailbox lines (kernels/wp_abi.h),
 * as the tests play it on the host: a word of a line read, and a line written payload first and its
 * sequence number last, so a reader that sees the number sees the whole line (as one 16-byte store
 * would give it), and a data job's image rebuilt from its words. Used by the stand-in driver's residents
 * (mock_resident.c) and test_resident_box. */
#ifndef WP_RESIDENT_LINES_H
#define WP_RESIDENT_LINES_H

#include <stddef.h>
#include <string.h>

#include "../../kernels/wp_abi.h"

static inline unsigned res_word(const unsigned *box, int line, int w) {
    return __atomic_load_n(&box[line * 4 + w], __ATOMIC_ACQUIRE);
}

static inline void res_put_line(unsigned *box, int line, unsigned seq, unsigned a, unsigned b, unsigned c) {
    __atomic_store_n(&box[line * 4 + 1], a, __ATOMIC_RELAXED);
    __atomic_store_n(&box[line * 4 + 2], b, __ATOMIC_RELAXED);
    __atomic_store_n(&box[line * 4 + 3], c, __ATOMIC_RELAXED);
    __atomic_store_n(&box[line * 4], seq, __ATOMIC_RELEASE);
}

/* A data job's image (kernels/wp_abi.h, WP_DATA_RESIDENT) rebuilt as the block does: img[0, cap) zeroed,
 * then each word line the header names written at its offset (one past cap, or not a multiple of 8,
 * left out). */
static inline void res_image_words(const unsigned *box, unsigned char *img, size_t cap) {
    memset(img, 0, cap);
    const unsigned words = WP_DRES_WORDS(res_word(box, WP_DRES_HEAD, 1));
    for (unsigned i = 0; i < words && i < WP_DRES_IN_LINES; i++) {
        const unsigned off = res_word(box, WP_DRES_IN + (int)i, 1);
        const unsigned w[2] = {res_word(box, WP_DRES_IN + (int)i, 2), res_word(box, WP_DRES_IN + (int)i, 3)};
        if (off % WP_DRES_WORD_BYTES == 0 && (size_t)off + sizeof w <= cap) memcpy(img + off, w, sizeof w);
    }
}

#endif
