/* bench_f32_text.c — f32 values printed as answers print them (wp_json_bits_text, util/numtext.c) and
 * read back with strtof, as the old printer's loop did: every STRIDE-th bit pattern (1: all 2^32 of
 * them, some minutes; the unit test checks a sample against the old text). Prints how many did not read
 * back to the same bits (NaNs: the text "NaN") and the time it took, printing and reading back.
 *   bench_f32_text [STRIDE]   (default 4096) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jsonval.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    const uint64_t stride = argc > 1 && strtoull(argv[1], NULL, 0) ? strtoull(argv[1], NULL, 0) : 4096;
    uint64_t values = 0, wrong = 0;
    const double t0 = now_ns();
    char text[48];
    for (uint64_t b = 0; b < (1ull << 32); b += stride) {
        wp_json_bits_text(WP_F32, b, text, sizeof text);
        values++;
        const float f = wp_bits_f32((uint32_t)b);
        bool ok;
        if (isnan(f))
            ok = !strcmp(text, "\"NaN\"");
        else if (isinf(f))
            ok = !strcmp(text, f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        else
            ok = wp_f32_bits(strtof(text, NULL)) == (uint32_t)b;
        if (!ok && wrong++ < 10) printf("0x%08llx printed %s\n", (unsigned long long)b, text);
    }
    printf("f32 every %llu-th pattern: %llu values, %llu do not read back (%.1f s)\n", (unsigned long long)stride,
           (unsigned long long)values, (unsigned long long)wrong, (now_ns() - t0) / 1e9);
    return wrong != 0;
}
