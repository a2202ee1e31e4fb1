/* test_numtext.c — util/numtext.c through jsonval.c and jsonlist.c, against the printf/strtod code it
 * replaced:
 *  - printing (wp_json_bits_text): every value reads back to the same bits, is never longer than the
 *    text of the old loop over "%.{P}g" (kept here as old_text), and equals it except where the
 *    shortest digits are shorter. f32: every 2^16-th bit pattern, random ones from a fixed seed, whole
 *    parts of every length, and each exponent's edges (powers of two, subnormals, max and min); f64:
 *    random patterns, whole parts of every length and each exponent's edges against the old text, more
 *    random ones for the round trip; f16 and bf16: all of them. (Every f32 is checked by
 *    bench/http/bench_f32_text.c, too slow for here.)
 *  - reading (wp_json_scan_array, type f64): the same bits as strtod on random decimal strings of every
 *    length, near and past the ends of the range, subnormal, and halfway between two doubles (exact
 *    within 19 digits and beyond).
 *  - integers: wp_num_u64_text and wp_num_i64_text against printf at every length; integer strings in
 *    lists; integers at every length and both ends of each type in a list, printed and read back.
 *  - lists: wp_json_values_raw against a cJSON array of wp_json_from_bits items; every f16 and bf16
 *    value in one list after other text; and lists long enough for several threads (printed and read)
 *    against one value at a time.
 *  - wp_copy_cut (util/common.h), the copy that replaced snprintf("%s") on request paths: whole, cut
 *    to its room, and into no room at all. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonval.h"
#include "kernels/data.h"
#include "t.h"
#include "util/common.h"
#include "util/numtext.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* The old printer (jsonval.c before util/numtext.c): rising precision until the text reads back. */
static void old_text(wp_type t, uint64_t bits, char *buf, size_t n) {
    double d = wp_value_to_double(t, bits);
    if (isnan(d)) {
        snprintf(buf, n, "\"NaN\"");
        return;
    }
    if (isinf(d)) {
        snprintf(buf, n, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, d);
        uint64_t back;
        if (t == WP_F32)
            back = wp_f32_bits(strtof(buf, NULL));
        else
            back = wp_value_from_double(t, strtod(buf, NULL));
        if (back == bits) break;
    }
    if (!strcmp(buf, "-0")) snprintf(buf, n, "-0.0");
}

/* What the old reader makes of a text: the bits it stands for. */
static uint64_t read_back(wp_type t, const char *s) {
    if (!strcmp(s, "\"NaN\"") || !strcmp(s, "\"Infinity\"") || !strcmp(s, "\"-Infinity\"")) {
        char inner[16];
        snprintf(inner, sizeof inner, "%.*s", (int)strlen(s) - 2, s + 1);
        uint64_t bits = 0;
        wp_json_string_to_bits(inner, t, "x", &bits, NULL);
        return bits;
    }
    return t == WP_F32 ? wp_f32_bits(strtof(s, NULL)) : wp_value_from_double(t, strtod(s, NULL));
}

typedef struct {
    long values, shorter, bad;
} tally;

/* One value: printed, compared with the old text, read back. */
static void check_print(wp_type t, uint64_t bits, bool against_old, tally *ty) {
    char got[48], want[48];
    wp_json_bits_text(t, bits, got, sizeof got);
    ty->values++;
    const bool is_nan = isnan(wp_value_to_double(t, bits));
    bool ok = is_nan ? !strcmp(got, "\"NaN\"") : read_back(t, got) == bits;
    if (ok && against_old) {
        old_text(t, bits, want, sizeof want);
        if (strcmp(got, want)) {
            ok = strlen(got) < strlen(want);
            if (ok && ty->shorter++ < 3)
                printf("  %s 0x%0*llx: %s, shorter than the old %s\n", wp_type_name(t), (int)wp_type_size(t) * 2,
                       (unsigned long long)bits, got, want);
        }
    }
    if (!ok && ty->bad++ < 10)
        fprintf(stderr, "  %s 0x%llx: %s (old: %s)\n", wp_type_name(t), (unsigned long long)bits, got,
                against_old ? want : "-");
}

static void report(const char *what, const tally *ty) {
    T_CASE(what);
    printf("%s: %ld values, %ld shorter than the old text\n", what, ty->values, ty->shorter);
    CHECKF(ty->bad == 0, "%ld of %ld values print wrong", ty->bad, ty->values);
    CHECK(ty->values > 0);
}

/* Each exponent's edges: the smallest and largest fractions and a few between, both signs. */
static void exponent_edges(wp_type t, int frac_bits, int exp_bits, tally *ty) {
    const uint64_t frac_max = (1ull << frac_bits) - 1;
    const uint64_t fracs[] = {0, 1, 2, 3, frac_max, frac_max - 1, 1ull << (frac_bits - 1), frac_max >> 1};
    for (uint64_t e = 0; e < (1ull << exp_bits); e++)
        for (size_t i = 0; i < sizeof fracs / sizeof fracs[0]; i++)
            for (uint64_t sign = 0; sign < 2; sign++)
                check_print(t, sign << (frac_bits + exp_bits) | e << frac_bits | fracs[i], true, ty);
}

static void test_print_f32(void) {
    tally ty = {0};
    for (uint64_t b = 0; b < (1ull << 32); b += 1ull << 16) check_print(WP_F32, b + (b >> 16) % 977, true, &ty);
    for (int i = 0; i < 60000; i++) check_print(WP_F32, rnd() & 0xFFFFFFFFu, true, &ty);
    for (int i = 0; i < 20000; i++) /* 1 .. 2^25: a point after 1 to 8 digits */
        check_print(WP_F32, wp_f32_bits(ldexpf((float)(rnd() >> 40), (int)(rnd() % 26) - 24)), true, &ty);
    exponent_edges(WP_F32, 23, 8, &ty);
    report("f32 sample", &ty);
}

static void test_print_f64(void) {
    tally ty = {0}, trip = {0};
    for (int i = 0; i < 30000; i++) check_print(WP_F64, rnd(), true, &ty);
    for (int i = 0; i < 40000; i++) /* short decimals, as clients send them: the old loop stops early */
        check_print(WP_F64, wp_f64_bits((double)(int64_t)(rnd() >> 40) / 1e6), true, &ty);
    for (int i = 0; i < 30000; i++) /* 1 .. 2^54 at full precision: a point after 1 to 16 digits */
        check_print(WP_F64, wp_f64_bits(ldexp((double)(rnd() >> 11), (int)(rnd() % 54) - 53)), true, &ty);
    exponent_edges(WP_F64, 52, 11, &ty);
    report("f64 sample", &ty);
    for (int i = 0; i < 1000000; i++) check_print(WP_F64, rnd(), false, &trip);
    report("f64 round trip", &trip);
}

static void test_print_small(void) {
    tally f16 = {0}, bf16 = {0};
    for (uint64_t b = 0; b < 65536; b++) check_print(WP_F16, b, true, &f16), check_print(WP_BF16, b, true, &bf16);
    report("f16 all", &f16);
    report("bf16 all", &bf16);
}

/* ---- reading ---- */

#define BATCH 1000
static char batch_text[BATCH * 72 + 8], batch_str[BATCH][72];
static int batch_n;
static long read_values, read_bad;

/* The batch as one list read by wp_json_scan_array, each value against strtod's bits. */
static void flush_batch(void) {
    size_t len = 0;
    batch_text[len++] = '[';
    for (int i = 0; i < batch_n; i++) {
        size_t k = strlen(batch_str[i]);
        memcpy(batch_text + len, batch_str[i], k);
        len += k;
        batch_text[len++] = i + 1 < batch_n ? ',' : ']';
    }
    static uint64_t got[BATCH];
    uint64_t count = 0;
    size_t used = 0;
    if (!wp_json_scan_array(batch_text, len, WP_F64, got, BATCH, &count, &used) || count != (uint64_t)batch_n) {
        if (read_bad++ < 10) fprintf(stderr, "  a list of %d numbers declined: %.80s\n", batch_n, batch_text);
        batch_n = 0;
        return;
    }
    for (int i = 0; i < batch_n; i++) {
        read_values++;
        uint64_t want = wp_f64_bits(strtod(batch_str[i], NULL));
        if (got[i] != want && read_bad++ < 10)
            fprintf(stderr, "  %s: 0x%016llx, strtod 0x%016llx\n", batch_str[i], (unsigned long long)got[i],
                    (unsigned long long)want);
    }
    static uint16_t half[BATCH]; /* f16 and bf16: rounded once from strtod's double */
    const wp_type halves[] = {WP_F16, WP_BF16};
    for (int h = 0; h < 2; h++) {
        const wp_type t = halves[h];
        bool ok = wp_json_scan_array(batch_text, len, t, half, BATCH, &count, &used) && count == (uint64_t)batch_n;
        for (int i = 0; ok && i < batch_n; i++) {
            uint64_t want = wp_value_from_double(t, strtod(batch_str[i], NULL));
            if (half[i] != want && read_bad++ < 10)
                fprintf(stderr, "  %s %s: 0x%04x, want 0x%04llx\n", wp_type_name(t), batch_str[i], half[i],
                        (unsigned long long)want);
        }
        if (!ok) read_bad++;
    }
    batch_n = 0;
}

static char *next_slot(void) {
    if (batch_n == BATCH) flush_batch();
    return batch_str[batch_n++];
}

/* A random decimal: 1..40 digits, a point somewhere or none, an exponent or none, a sign or none. */
static void random_decimal(int exp_lo, int exp_hi) {
    char *s = next_slot(), *p = s;
    if (rnd() & 1) *p++ = '-';
    const int digits = 1 + (int)(rnd() % (rnd() & 1 ? 19 : 40)), point = (int)(rnd() % (uint64_t)(digits + 1));
    for (int i = 0; i < digits; i++) {
        if (i == point && i > 0) *p++ = '.';
        *p++ = (char)('0' + (i == 0 && digits > 1 ? 1 + rnd() % 9 : rnd() % 10));
    }
    if (rnd() % 4)
        sprintf(p, "e%d", exp_lo + (int)(rnd() % (uint64_t)(exp_hi - exp_lo + 1)));
    else
        *p = 0;
}

/* Exactly halfway between two doubles, in at most 19 digits: (2m + 1) / 2^j for a 53-bit m (j = 1..3),
 * and r * 2^(k-q) * 10^q for an odd 54-bit r * 5^q. */
static void exact_halfway(void) {
    const uint64_t m = (1ull << 52) | (rnd() & ((1ull << 52) - 1));
    const int j = 1 + (int)(rnd() % 3);
    uint64_t w = 2 * m + 1;
    for (int i = 0; i < j; i++) w *= 5;
    char digits[24];
    int n = sprintf(digits, "%llu", (unsigned long long)w);
    sprintf(next_slot(), "%.*s.%s", n - j, digits, digits + n - j);
    const int q = 1 + (int)(rnd() % 22);
    uint64_t p5 = 1;
    for (int i = 0; i < q; i++) p5 *= 5;
    if (p5 >= 1ull << 53) return; /* 5^23 and above leave no odd 54-bit multiple in 64 bits */
    const uint64_t lo = ((1ull << 53) + p5 - 1) / p5, hi = ((1ull << 54) - 1) / p5;
    uint64_t r = lo + rnd() % (hi - lo + 1);
    if (!(r & 1)) r = r + 1 <= hi ? r + 1 : r - 1;
    if (r < lo) return;
    const uint64_t shifted = r << (rnd() % 4);
    if (shifted / r == 0 || shifted >= 10000000000000000000ull) return;
    sprintf(next_slot(), "%llue%d", (unsigned long long)shifted, q);
}

/* Near halfway, beyond 19 digits: the midpoint of a random double and the next, to 20..40 digits. */
static void near_halfway(void) {
    double d;
    do d = wp_bits_f64(rnd() & 0x7FEFFFFFFFFFFFFFull);
    while (!isfinite(d) || d == 0);
    long double mid = (long double)d + ((long double)nextafter(d, INFINITY) - (long double)d) / 2;
    sprintf(next_slot(), "%.*Le", 19 + (int)(rnd() % 21), mid);
}

static void test_read(void) {
    T_CASE("read");
    for (int i = 0; i < 150000; i++) random_decimal(-30, 30);
    for (int i = 0; i < 120000; i++) random_decimal(-345, 312);
    for (int i = 0; i < 60000; i++) random_decimal(-345, -300); /* subnormal and underflow */
    for (int i = 0; i < 60000; i++) exact_halfway();
    for (int i = 0; i < 60000; i++) near_halfway();
    for (int i = 0; i < 120000; i++) { /* what printers send: shortest and 17 digits */
        uint64_t bits = rnd() & 0x7FFFFFFFFFFFFFFFull;
        if (!isfinite(wp_bits_f64(bits))) continue;
        wp_json_bits_text(WP_F64, bits, next_slot(), 72);
        sprintf(next_slot(), "%.17g", wp_bits_f64(bits));
    }
    flush_batch();
    printf("read: %ld decimal strings against strtod\n", read_values);
    CHECKF(read_bad == 0, "%ld of %ld read wrong", read_bad, read_values);
    CHECK(read_values > 500000);
}

/* Integer strings (64-bit values come as strings) in a list, against wp_json_string_to_bits one by one:
 * plain digits of every length, signs, leading zeros and hex prefixes (base 0, as strtoll reads them). */
static void test_int_strings(void) {
    T_CASE("integer strings");
    const wp_type types[] = {WP_I32, WP_U32, WP_I64, WP_U64};
    static const char *const forms[] = {"%s%llu", "%s0%llu", "%s0x%llx", "+%s%llu", " %s%llu"};
    int bad = 0, compared = 0;
    for (size_t k = 0; k < 4; k++) {
        const wp_type t = types[k];
        for (int round = 0; round < 50; round++) {
            char text[BATCH * 32], *p = text;
            static uint64_t want[BATCH], got[BATCH];
            int n = 0;
            *p++ = '[';
            while (n < BATCH) {
                char s[48];
                const int form = rnd() % 8 < 5 ? 0 : (int)(rnd() % 5);
                snprintf(s, sizeof s, forms[form], rnd() % 3 ? "" : "-", (unsigned long long)(rnd() >> (rnd() % 64)));
                if (wp_json_string_to_bits(s, t, "x", &want[n], NULL)) continue; /* only what converts */
                p += sprintf(p, "%s\"%s\"", n ? "," : "", s);
                n++;
            }
            *p++ = ']';
            uint64_t count = 0;
            size_t used = 0;
            bool ok = wp_json_scan_array(text, (size_t)(p - text), t, got, BATCH, &count, &used);
            if (t == WP_I32 || t == WP_U32) /* packed 32-bit words */
                for (int i = n - 1; ok && i >= 0; i--) got[i] = ((uint32_t *)got)[i];
            bad += !ok || count != (uint64_t)n;
            for (int i = 0; ok && i < n; i++, compared++) bad += got[i] != want[i];
        }
    }
    CHECKF(bad == 0, "%d of %d integer strings read wrong", bad, compared);
    uint64_t out[2], count;
    size_t used;
    CHECK(!wp_json_scan_array("[\"1\",\"-1\"]", 10, WP_U64, out, 2, &count, &used)); /* -1 is no u64 */
    CHECK(!wp_json_scan_array("[\"2147483648\"]", 14, WP_I32, out, 2, &count, &used));
    CHECK(wp_json_scan_array("[\"-2147483648\"]", 15, WP_I32, out, 2, &count, &used) && count == 1 &&
          (uint32_t)out[0] == 0x80000000u);
}

static void test_integers(void) {
    T_CASE("integers");
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        const uint64_t v = rnd() >> (rnd() % 64);
        char got[24], want[24];
        int n = wp_num_u64_text(got, v);
        sprintf(want, "%llu", (unsigned long long)v);
        bad += strcmp(got, want) != 0 || n != (int)strlen(want);
    }
    CHECKF(bad == 0, "%d integers printed wrong", bad);
    char s[24];
    CHECK(wp_num_u64_text(s, 0) == 1 && !strcmp(s, "0"));
    CHECK(wp_num_u64_text(s, UINT64_MAX) == 20 && !strcmp(s, "18446744073709551615"));
    for (int i = 0; i < 200000; i++) { /* signed, every length, and the neighbours of each power of ten */
        const uint64_t m = i < 38 ? (uint64_t)pow(10, i / 2) + (uint64_t)(i % 3) - 1 : rnd() >> (rnd() % 64);
        const int64_t v = (int64_t)(i & 1 ? 0 - m : m);
        char got[24], want[24];
        int n = wp_num_i64_text(got, v);
        sprintf(want, "%lld", (long long)v);
        bad += strcmp(got, want) != 0 || n != (int)strlen(want);
    }
    CHECKF(bad == 0, "%d signed integers printed wrong", bad);
    CHECK(wp_num_i64_text(s, INT64_MIN) == 20 && !strcmp(s, "-9223372036854775808"));
    CHECK(wp_num_i64_text(s, INT64_MAX) == 19 && !strcmp(s, "9223372036854775807"));
    CHECK(wp_num_i64_text(s, 0) == 1 && !strcmp(s, "0"));
    for (uint64_t p = 1, k = 1; k <= 19; p *= 10, k++) { /* 10^k - 1 and 10^k: the lengths' edges */
        char want[24];
        sprintf(want, "%llu", (unsigned long long)(p * 10 - 1));
        CHECKF(wp_num_u64_text(s, p * 10 - 1) == (int)k && !strcmp(s, want), "%s", want);
        sprintf(want, "%llu", (unsigned long long)p);
        CHECKF(wp_num_u64_text(s, p) == (int)k && !strcmp(s, want), "%s", want);
    }
    wp_json_bits_text(WP_I64, (uint64_t)INT64_MIN, s, sizeof s);
    CHECK(!strcmp(s, "\"-9223372036854775808\""));
    wp_json_bits_text(WP_I32, 0x80000000u, s, sizeof s);
    CHECK(!strcmp(s, "-2147483648"));
}

/* The list writer: the same bytes as a cJSON array of wp_json_from_bits items. */
static void test_list(void) {
    T_CASE("list");
    const wp_type types[] = {WP_F32, WP_F64, WP_F16, WP_BF16, WP_I32, WP_U32, WP_I64, WP_U64};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const wp_type t = types[k];
        uint64_t words[300];
        for (int i = 0; i < 300; i++) words[i] = rnd();
        for (int n = 0; n <= 300; n += 150) {
            cJSON *arr = cJSON_CreateArray(), *raw = wp_json_values_raw(t, words, (uint64_t)n);
            for (int i = 0; i < n; i++)
                cJSON_AddItemToArray(arr, wp_json_from_bits(t, wp_data_load(t, words, (uint64_t)i)));
            char *want = wp_json_print(arr, NULL), *got = raw ? wp_json_print(raw, NULL) : NULL;
            CHECKF(got && want && !strcmp(got, want), "%s x %d", wp_type_name(t), n);
            free(want), free(got);
            cJSON_Delete(arr), cJSON_Delete(raw);
        }
    }
}

/* The list of n values one value at a time (wp_json_bits_text and commas): what the list writer must
 * give, byte for byte. */
static char *reference_list(wp_type t, const void *words, uint64_t n, size_t *len) {
    char *text = malloc((size_t)n * 26 + 3), *p = text;
    *p++ = '[';
    for (uint64_t i = 0; i < n; i++) {
        if (i) *p++ = ',';
        wp_json_bits_text(t, wp_data_load(t, words, i), p, 48);
        p += strlen(p);
    }
    *p++ = ']';
    *p = 0;
    *len = (size_t)(p - text);
    return text;
}

/* Every f16 and bf16 value in one list (long enough for several threads), after some text already in
 * the builder: printed as one value at a time prints them, read back to the same bits (NaNs as NaN). */
static void test_half_lists(void) {
    T_CASE("every half in a list");
    const wp_type types[] = {WP_F16, WP_BF16};
    for (size_t k = 0; k < 2; k++) {
        const wp_type t = types[k];
        enum { N = 4 * 65536 };
        uint16_t *words = malloc(N * 2), *back = malloc(N * 2);
        for (uint32_t i = 0; i < N; i++) words[i] = (uint16_t)(i * 40503u); /* every value, four times, mixed */
        size_t want_len;
        char *want = reference_list(t, words, N, &want_len);
        wp_jtext got = {0};
        wp_jtext_put(&got, "{\"data\":", 8);
        const bool ok = wp_json_append_values(&got, t, words, N);
        CHECKF(ok && got.n == want_len + 8 && !memcmp(got.p + 8, want, want_len), "%s: other bytes", wp_type_name(t));
        uint64_t count = 0;
        size_t used = 0;
        int bad = 0;
        if (ok && wp_json_scan_array(got.p + 8, got.n - 8, t, back, N, &count, &used) && count == N)
            for (uint32_t i = 0; i < N; i++) {
                const bool nan = isnan(wp_value_to_double(t, words[i]));
                bad += nan ? !isnan(wp_value_to_double(t, back[i])) : back[i] != words[i];
            }
        else
            bad = -1;
        CHECKF(bad == 0, "%s: %d values read back wrong", wp_type_name(t), bad);
        free(got.p), free(want), free(words), free(back);
    }
}

/* Integers at their edges in a list, each type: printed as one at a time prints them, read back. */
static void test_int_lists(void) {
    T_CASE("integer edges in a list");
    const wp_type types[] = {WP_I32, WP_U32, WP_I64, WP_U64};
    enum { N = 2000 };
    for (size_t k = 0; k < 4; k++) {
        const wp_type t = types[k];
        uint64_t words[N], back[N];
        for (int i = 0; i < N; i++) { /* 2^j + d, -(2^j + d), 10^j + d: every length, both ends */
            const int j = i / 8 % 64, d = i % 8 - 4;
            const uint64_t base = i % 3 == 2 ? (uint64_t)pow(10, j % 20) : 1ull << j;
            const uint64_t v = i % 3 == 1 ? 0 - (base + (uint64_t)d) : base + (uint64_t)d;
            wp_data_store(t, words, (uint64_t)i, v & wp_type_bitmask(t));
        }
        size_t want_len;
        char *want = reference_list(t, words, N, &want_len);
        wp_jtext got = {0};
        CHECKF(wp_json_append_values(&got, t, words, N) && got.n == want_len && !memcmp(got.p, want, want_len),
               "%s: other bytes", wp_type_name(t));
        uint64_t count = 0;
        size_t used = 0;
        CHECKF(wp_json_scan_array(got.p, got.n, t, back, N, &count, &used) && count == N &&
                   !memcmp(back, words, N * wp_type_size(t)),
               "%s: does not read back", wp_type_name(t));
        free(got.p), free(want);
    }
}

/* Lists long enough to be read and printed on several threads (where the machine has several CPUs):
 * the bytes of one value at a time, read back to the same words; a string with a comma or a bracket at
 * a cut still declines. */
static void test_long_lists(void) {
    T_CASE("long lists");
    enum { N = 300000 };
    const wp_type types[] = {WP_F64, WP_F32, WP_F16, WP_BF16, WP_I32, WP_U32, WP_I64, WP_U64};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const wp_type t = types[k];
        uint64_t *words = malloc(N * 8), *back = malloc(N * 8);
        for (int i = 0; i < N; i++) words[i] = rnd();
        if (t == WP_F64)
            for (int i = 0; i < N; i++) words[i] &= 0xFFEFFFFFFFFFFFFFull; /* no NaN: "NaN" reads back as one */
        if (t == WP_F32)
            for (int i = 0; i < N * 2; i++) ((uint32_t *)words)[i] &= 0xFF7FFFFFu;
        if (t == WP_F16)
            for (int i = 0; i < N * 4; i++) ((uint16_t *)words)[i] &= 0xFBFF;
        if (t == WP_BF16)
            for (int i = 0; i < N * 4; i++) ((uint16_t *)words)[i] &= 0xFF7F;
        wp_jtext one = {0};
        wp_json_append_values(&one, t, words, N);
        if (one.p) one.p[one.n] = 0; /* the builder keeps room for it */
        size_t want_len;
        char *want = reference_list(t, words, N, &want_len);
        cJSON *raw = wp_json_values_raw(t, words, N);
        CHECKF(raw && one.p && raw->valuestring && one.n == want_len && !memcmp(one.p, want, want_len) &&
                   !strcmp(raw->valuestring, want),
               "%s: threads print other bytes", wp_type_name(t));
        free(want);
        uint64_t count = 0;
        size_t used = 0;
        bool ok = one.p && wp_json_scan_array(one.p, one.n, t, back, N, &count, &used);
        CHECKF(ok && count == N && used == one.n && !memcmp(back, words, N * wp_type_size(t)),
               "%s: the long list does not read back", wp_type_name(t));
        void *fresh = NULL;
        ok = one.p && wp_json_scan_array_new(one.p, one.n, t, &fresh, &count, &used);
        CHECKF(ok && count == N && used == one.n && !memcmp(fresh, words, N * wp_type_size(t)),
               "%s: the long list does not read back into a new buffer", wp_type_name(t));
        free(fresh);
        if (one.p && t == WP_I64) { /* a string value cut by a comma, then by a bracket: never read */
            char *mid = strstr(one.p + one.n / 2, ",\""); /* the comma before a string */
            if (mid++) {
                char keep = mid[1];
                mid[1] = ',';
                CHECK(!wp_json_scan_array(one.p, one.n, t, back, N, &count, &used));
                mid[1] = ']';
                CHECK(!wp_json_scan_array(one.p, one.n, t, back, N, &count, &used));
                mid[1] = keep;
            }
        }
        CHECK(one.p && !wp_json_scan_array(one.p, one.n, t, back, N - 1, &count, &used)); /* one too many */
        cJSON_Delete(raw);
        free(one.p), free(words), free(back);
    }
}

static void test_copy_cut(void) {
    char d[8];
    memset(d, 'x', sizeof d);
    CHECK(wp_copy_cut(d, sizeof d, "sm_90") == 5 && !strcmp(d, "sm_90"));
    CHECK(wp_copy_cut(d, sizeof d, "0123456789") == 7 && !strcmp(d, "0123456"));
    CHECK(wp_copy_cut(d, 1, "abc") == 0 && d[0] == 0);
    d[0] = 'x';
    CHECK(wp_copy_cut(d, 0, "abc") == 0 && d[0] == 'x');
    CHECK(wp_copy_cut(d, sizeof d, "") == 0 && d[0] == 0);
}

int main(void) {
    test_copy_cut();
    test_integers();
    test_int_strings();
    test_list();
    test_half_lists();
    test_int_lists();
    test_long_lists();
    test_print_small();
    test_print_f32();
    test_print_f64();
    test_read();
    return t_done("numtext");
}
