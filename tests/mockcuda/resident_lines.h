/* resident_lines.h — the device's side of a resident warp kernel's mailbox lines (kernels/wp_abi.h),
 * as the tests play it on the host: a word of a line read, and a line written payload first and its
 * sequence number last, so a reader that sees the number sees the whole line (as one 16-byte store
 * would give it). Used by the stand-in driver's residents (mock_resident.c) and test_resident_box. */
#ifndef WP_RESIDENT_LINES_H
#define WP_RESIDENT_LINES_H

static inline unsigned res_word(const unsigned *box, int line, int w) {
    return __atomic_load_n(&box[line * 4 + w], __ATOMIC_ACQUIRE);
}

static inline void res_put_line(unsigned *box, int line, unsigned seq, unsigned a, unsigned b, unsigned c) {
    __atomic_store_n(&box[line * 4 + 1], a, __ATOMIC_RELAXED);
    __atomic_store_n(&box[line * 4 + 2], b, __ATOMIC_RELAXED);
    __atomic_store_n(&box[line * 4 + 3], c, __ATOMIC_RELAXED);
    __atomic_store_n(&box[line * 4], seq, __ATOMIC_RELEASE);
}

#endif
