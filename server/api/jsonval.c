/* jsonval.c — typed values to and from JSON (see jsonval.h for the rules). */
#include "jsonval.h"
#include "util/jsonout.h"
#include "util/numtext.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_int_text(const char *s, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    errno = 0;
    char *end = NULL;
    bool neg = s[0] == '-';
    if (!*s) return WP_FAIL(err, 400, "bad_value", field, "%s: empty string is not a number", field);
    if (wp_type_is_signed(t)) {
        long long v = strtoll(s, &end, 0);
        if (errno || *end)
            return WP_FAIL(err, 400, "bad_value", field, "%s: \"%.40s\" is not a %s", field, s, wp_type_name(t));
        if (t == WP_I32 && (v < INT32_MIN || v > INT32_MAX))
            return WP_FAIL(err, 400, "out_of_range", field, "%s: %lld does not fit i32", field, v);
        *out = (uint64_t)v & wp_type_bitmask(t);
        return 0;
    }
    if (neg) return WP_FAIL(err, 400, "out_of_range", field, "%s: %.40s is negative for %s", field, s, wp_type_name(t));
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return WP_FAIL(err, 400, "bad_value", field, "%s: \"%.40s\" is not a %s", field, s, wp_type_name(t));
    if (t == WP_U32 && v > UINT32_MAX)
        return WP_FAIL(err, 400, "out_of_range", field, "%s: %llu does not fit u32", field, v);
    *out = v;
    return 0;
}

static int float_from_double(wp_type t, double d, uint64_t *out) {
    *out = wp_value_from_double(t, d);
    return 0;
}

int wp_json_number_to_bits(double d, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    if (!wp_type_is_int(t)) return float_from_double(t, d, out);
    if (d != floor(d)) return WP_FAIL(err, 400, "bad_value", field, "%s: %g is not an integer", field, d);
    if (fabs(d) > 9007199254740992.0)
        return WP_FAIL(err, 400, "precision_loss", field, "%s: %g is beyond 2^53; send 64-bit integers as strings",
                       field, d);
    /* What parse_int_text makes of "%.0f" — the exact digits of a whole double within 2^53 — without
     * printing them; a negative value (or -0) for an unsigned type takes that path for its message. */
    if (wp_type_is_signed(t)) {
        long long v = (long long)d;
        if (t == WP_I32 && (v < INT32_MIN || v > INT32_MAX))
            return WP_FAIL(err, 400, "out_of_range", field, "%s: %lld does not fit i32", field, v);
        *out = (uint64_t)v & wp_type_bitmask(t);
        return 0;
    }
    if (!signbit(d)) {
        unsigned long long v = (unsigned long long)d;
        if (t == WP_U32 && v > UINT32_MAX)
            return WP_FAIL(err, 400, "out_of_range", field, "%s: %llu does not fit u32", field, v);
        *out = v;
        return 0;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.0f", d);
    return parse_int_text(buf, t, field, out, err);
}

int wp_json_string_to_bits(const char *s, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    if (wp_type_is_int(t)) return parse_int_text(s, t, field, out, err);
    if (!strcmp(s, "NaN")) return float_from_double(t, NAN, out);
    if (!strcmp(s, "Infinity") || !strcmp(s, "+Infinity")) return float_from_double(t, INFINITY, out);
    if (!strcmp(s, "-Infinity")) return float_from_double(t, -INFINITY, out);
    char *end = NULL;
    errno = 0;
    if (t == WP_F32) { /* strtof rounds once, straight to float */
        float f = strtof(s, &end);
        if (*s && !*end) {
            *out = wp_f32_bits(f);
            return 0;
        }
    } else {
        double d = strtod(s, &end);
        if (*s && !*end) return float_from_double(t, d, out);
    }
    return WP_FAIL(err, 400, "bad_value", field, "%s: \"%.40s\" is not a number, \"NaN\" or \"[-]Infinity\"", field, s);
}

int wp_json_to_bits(const cJSON *v, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    if (cJSON_IsObject(v)) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(v, "bits");
        if (!cJSON_IsString(b) || cJSON_GetArraySize(v) != 1)
            return WP_FAIL(err, 400, "bad_value", field, "%s: an object value must be {\"bits\":\"0x...\"}", field);
        char *end = NULL;
        errno = 0;
        unsigned long long bits = strtoull(b->valuestring, &end, 16);
        if (errno || *end || (bits & ~wp_type_bitmask(t)))
            return WP_FAIL(err, 400, "bad_value", field, "%s: bits \"%.40s\" is not a %zu-byte hex pattern", field,
                           b->valuestring, wp_type_size(t));
        *out = bits;
        return 0;
    }
    if (cJSON_IsString(v)) return wp_json_string_to_bits(v->valuestring, t, field, out, err);
    if (cJSON_IsNumber(v)) return wp_json_number_to_bits(v->valuedouble, t, field, out, err);
    if (wp_type_is_int(t))
        return WP_FAIL(err, 400, "wrong_type", field, "%s must be a number (or a string for 64-bit values)", field);
    return WP_FAIL(err, 400, "wrong_type", field, "%s must be a number", field);
}

/* The shortest "%.{P}g" that reads back to the same value in the type (util/numtext.c: the text a loop
 * over rising precisions stopped at, or shorter); -0 kept as -0.0; NaN and infinities as strings. buf:
 * WP_NUM_TEXT_MAX bytes. */
static int float_text(wp_type t, uint64_t bits, char *buf) {
    const wp_num_format *f = t == WP_F64   ? &wp_num_f64
                             : t == WP_F32 ? &wp_num_f32
                             : t == WP_F16 ? &wp_num_f16
                                           : &wp_num_bf16;
    int n = wp_num_float_text(buf, f, bits);
    if (n == 2 && buf[0] == '-' && buf[1] == '0') n = (memcpy(buf, "-0.0", 5), 4);
    if (n >= 0) return n;
    double d = wp_value_to_double(t, bits);
    const char *s = isnan(d) ? "\"NaN\"" : d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    n = (int)strlen(s);
    memcpy(buf, s, (size_t)n + 1);
    return n;
}

/* f16 and bf16 have 65,536 values each: their texts are a table (2 x 1 MiB, built on first use from
 * float_text, so the same bytes), each NUL-padded with its length in the last byte. */
#define WP_SMALL_TEXT 16
static char small_texts[2][65536][WP_SMALL_TEXT];
static pthread_once_t small_once[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
static void build_small(int which) {
    const wp_type t = which ? WP_BF16 : WP_F16;
    for (uint32_t bits = 0; bits < 65536; bits++) {
        char text[WP_NUM_TEXT_MAX], *entry = small_texts[which][bits];
        const int n = float_text(t, bits, text); /* at most 11 bytes ("-Infinity") */
        memcpy(entry, text, (size_t)n + 1);
        entry[WP_SMALL_TEXT - 1] = (char)n;
    }
}
static void build_f16(void) { build_small(0); }
static void build_bf16(void) { build_small(1); }

static inline int small_text(wp_type t, uint64_t bits, char *buf) {
    const int which = t == WP_BF16;
    pthread_once(&small_once[which], which ? build_bf16 : build_f16);
    const char *entry = small_texts[which][bits & 0xFFFF];
    memcpy(buf, entry, WP_SMALL_TEXT);
    return entry[WP_SMALL_TEXT - 1];
}

/* One value's text into buf (WP_JSON_VALUE_MAX bytes), NUL-terminated; returns its length. */
#define WP_JSON_VALUE_MAX 48
_Static_assert(WP_JSON_VALUE_MAX >= WP_NUM_TEXT_MAX, "a float's text is written in place");
static inline int value_text(wp_type t, uint64_t bits, char *buf) {
    int n;
    switch (t) { /* integers without printf: a /v1/warp answer has a few hundred of them */
    case WP_I32:
        return wp_json_fmt_i64(buf, (int32_t)(uint32_t)bits);
    case WP_U32:
        return wp_json_fmt_u64(buf, (uint32_t)bits);
    case WP_I64: /* 64-bit integers are strings (DESIGN.md §4) */
    case WP_U64:
        buf[0] = '"';
        n = 1 + (t == WP_I64 ? wp_json_fmt_i64(buf + 1, (int64_t)bits) : wp_json_fmt_u64(buf + 1, bits));
        memcpy(buf + n, "\"", 2);
        return n + 1;
    case WP_F16:
    case WP_BF16:
        return small_text(t, bits, buf);
    default:
        return float_text(t, bits, buf);
    }
}

void wp_json_bits_text(wp_type t, uint64_t bits, char *buf, size_t n) {
    char text[WP_JSON_VALUE_MAX];
    const int len = value_text(t, bits, text);
    if ((size_t)len >= n) { /* never with the callers' 48 bytes */
        if (n) buf[0] = 0;
        return;
    }
    memcpy(buf, text, (size_t)len + 1);
}

/* ---- a long list on several threads ---- */

#define WP_LIST_THREADS_MAX 8              /* threads one list may use */
#define WP_LIST_BYTES_PER_THREAD (1 << 20) /* of text: below this, one thread */

#define WP_LIST_VALUES_PER_THREAD (1 << 16) /* printing: below this many values, one thread */

/* How many threads a list of this much work gets (units: a thread's worth, WP_LIST_BYTES_PER_THREAD of
 * text read or WP_LIST_VALUES_PER_THREAD values printed): one a unit, at most one a CPU. */
static int list_threads(uint64_t units) {
    if (units < 2) return 1; /* every small request: no look at the CPUs (sysconf reads /sys: a file a call) */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t k = units < WP_LIST_THREADS_MAX ? units : WP_LIST_THREADS_MAX;
    if (cpus > 0 && k > (uint64_t)cpus) k = (uint64_t)cpus;
    return k > 1 ? (int)k : 1;
}

/* fn on each of k parts (part_size bytes apart), part 0 on this thread; a part whose thread cannot
 * start runs here too. */
static void run_parts(void *(*fn)(void *), void *parts, size_t part_size, int k) {
    pthread_t th[WP_LIST_THREADS_MAX];
    bool started[WP_LIST_THREADS_MAX] = {false};
    for (int i = 1; i < k; i++) started[i] = pthread_create(&th[i], NULL, fn, (char *)parts + i * part_size) == 0;
    fn(parts);
    for (int i = 1; i < k; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            fn((char *)parts + i * part_size);
    }
}

/* n values' texts separated by commas (no brackets), appended to out. */
static bool append_texts(wp_jtext *out, wp_type t, const uint8_t *at, uint64_t n) {
    const size_t size = wp_type_size(t);
    for (uint64_t i = 0; i < n; i++, at += size) {
        char *p = wp_jtext_room(out, WP_JSON_VALUE_MAX + 1);
        if (!p) return false;
        uint64_t bits; /* wp_data_store's layout: packed native words */
        if (size == 4) {
            uint32_t w;
            memcpy(&w, at, 4);
            bits = w;
        } else if (size == 8) {
            memcpy(&bits, at, 8);
        } else {
            uint16_t h;
            memcpy(&h, at, 2);
            bits = h;
        }
        *p = ',';
        out->n += (size_t)value_text(t, bits, p + (i > 0)) + (i > 0);
    }
    return !out->failed;
}

bool wp_json_append_values(wp_jtext *out, wp_type t, const void *data, uint64_t n) {
    wp_jtext_add(out, "[", 1);
    append_texts(out, t, data, n);
    wp_jtext_add(out, "]", 1);
    return !out->failed;
}

typedef struct {
    wp_type t;
    const uint8_t *data;
    uint64_t n;
    wp_jtext text;
} print_part;

static void *print_part_run(void *arg) {
    print_part *s = arg;
    /* a first guess at the size (f64's are about 20 bytes); it grows by doubling from there */
    if (wp_jtext_room(&s->text, (size_t)s->n * (wp_type_size(s->t) * 2 + 4) + 2))
        append_texts(&s->text, s->t, s->data, s->n);
    return NULL;
}

cJSON *wp_json_values_raw(wp_type t, const void *data, uint64_t n) {
    print_part parts[WP_LIST_THREADS_MAX];
    const int k = list_threads(n / WP_LIST_VALUES_PER_THREAD); /* each part has values */
    const size_t size = wp_type_size(t);
    for (int i = 0; i < k; i++) { /* k runs of values, the first one's text after the '[' */
        const uint64_t from = n * (uint64_t)i / (uint64_t)k, to = n * (uint64_t)(i + 1) / (uint64_t)k;
        parts[i] = (print_part){t, (const uint8_t *)data + from * size, to - from, {0}};
    }
    wp_jtext_put(&parts[0].text, "[", 1);
    run_parts(print_part_run, parts, sizeof parts[0], k);
    for (int i = 1; i < k; i++) {
        if (parts[i].n) wp_jtext_put(&parts[0].text, ",", 1);
        wp_jtext_put(&parts[0].text, parts[i].text.p, parts[i].text.n);
        parts[0].text.failed |= parts[i].text.failed;
        free(parts[i].text.p);
    }
    wp_jtext_put(&parts[0].text, "]", 1);
    if (parts[0].text.failed) {
        free(parts[0].text.p);
        return NULL;
    }
    return wp_jtext_raw(&parts[0].text);
}

/* As raw JSON text: cJSON prints a raw item by copying it, where a number item costs a printf, a
 * scanf and a locale look-up — most of a /v1/warp response's time. */
cJSON *wp_json_from_bits(wp_type t, uint64_t bits) {
    char buf[48];
    wp_json_bits_text(t, bits, buf, sizeof buf);
    return cJSON_CreateRaw(buf);
}

/* ---- large arrays in place (jsonval.h) ---- */

static inline bool json_space(char c) { return (unsigned char)c <= 32; } /* what cJSON skips */
static inline bool is_digit(char c) { return (unsigned char)(c - '0') < 10; }
static inline bool number_char(char c) { /* what cJSON copies into a number before strtod */
    return is_digit(c) || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

bool wp_json_find_top_key(const char *s, size_t n, const char *key, const char *hint, size_t *value_at,
                          char *hint_value, size_t hint_cap) {
    size_t key_len = strlen(key), hint_len = hint ? strlen(hint) : 0, i = 0;
    bool hint_seen = false;
    if (hint_value && hint_cap) hint_value[0] = 0;
    while (i < n && json_space(s[i])) i++;
    if (i >= n || s[i] != '{') return false;
    int depth = 0;
    while (i < n) {
        char c = s[i];
        if (c != '"') {
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth <= 0)
                return false;
            i++;
            continue;
        }
        size_t start = ++i;
        bool escaped = false; /* an escape, or a NUL byte (cJSON's name ends there): cJSON decides */
        while (i < n && s[i] != '"') {
            if (s[i] == '\\')
                escaped = true, i++;
            else if (!s[i])
                escaped = true;
            i++;
        }
        if (i >= n) return false;
        size_t len = i++ - start, j = i;
        if (depth != 1) continue;
        while (j < n && json_space(s[j])) j++;
        if (j >= n || s[j] != ':') continue; /* a value, not a key */
        if (escaped) return false;
        for (j++; j < n && json_space(s[j]);) j++;
        if (len == key_len && !memcmp(s + start, key, len)) {
            *value_at = j;
            return true;
        }
        if (hint && !hint_seen && len == hint_len && !memcmp(s + start, hint, len)) {
            hint_seen = true;
            size_t k = j + 1;
            while (k < n && s[k] != '"' && s[k] != '\\' && k - j - 1 < hint_cap) k++;
            if (hint_value && j < n && s[j] == '"' && k < n && s[k] == '"' && k - j - 1 < hint_cap) {
                memcpy(hint_value, s + j + 1, k - j - 1);
                hint_value[k - j - 1] = 0;
            }
        }
        i = j;
    }
    return false;
}

/* 10^0 .. 10^22: every one exact in a double. */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Eight ASCII digits at s as their value, or false (s + 8 <= the end): one 64-bit load and three
 * multiplications in place of eight steps, for the long numbers printers send. Little-endian only. */
static inline bool eight_digits(const char *s, uint32_t *value) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, s, 8);
    const uint64_t high = 0xF0F0F0F0F0F0F0F0ull; /* every byte 0x30..0x39: its high nibble and that of byte + 6 are 3 */
    if (((v & high) | (((v + 0x0606060606060606ull) & high) >> 4)) != 0x3333333333333333ull) return false;
    v -= 0x3030303030303030ull;
    v = v * 10 + (v >> 8); /* pairs of digits in every other byte */
    v = ((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32)) +
         ((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32))) >>
        32;
    *value = (uint32_t)v;
    return true;
#else
    (void)s, (void)value;
    return false;
#endif
}

/* One number as cJSON reads it: the run of number_char (at most 63 of them) through strtod, which must
 * take the whole run (else cJSON stops inside it and the array is invalid). Returns the run's length,
 * or 0 when cJSON would not read exactly one number here. The value is strtod's: a mantissa of at most
 * 19 digits within 2^53 and a power of ten within 10^±22 are both exact doubles, so one multiplication
 * or division rounds once, correctly, as strtod does (Clinger's fast path); the rest is rounded by
 * Eisel-Lemire (util/numtext.c), also correctly, and what it cannot tell (past 10^±308, or more than 19
 * digits that round two ways) calls strtod. */
static size_t scan_number(const char *p, const char *end, double *out) {
    const char *s = p;
    bool neg = *s == '-';
    if (neg) s++;
    uint64_t w = 0;
    int digits = 0, e10 = 0;
    bool any = false, exact = true;
    uint32_t eight;
    for (; s < end && is_digit(*s); s++) {
        any = true;
        while (end - s >= 8 && digits <= 11 && (w || *s != '0') && eight_digits(s, &eight))
            w = w * 100000000 + eight, digits += 8, s += 8;
        if (s >= end || !is_digit(*s)) break;
        if (w == 0 && *s == '0') continue;
        if (digits < 19)
            w = w * 10 + (uint64_t)(*s - '0'), digits++;
        else
            e10++, exact = exact && *s == '0';
    }
    if (s < end && *s == '.') {
        for (s++; s < end && is_digit(*s); s++) {
            any = true;
            while (end - s >= 8 && digits <= 11 && (w || *s != '0') && eight_digits(s, &eight))
                w = w * 100000000 + eight, digits += 8, e10 -= 8, s += 8;
            if (s >= end || !is_digit(*s)) break;
            if (w == 0 && *s == '0') {
                e10--;
                continue;
            }
            if (digits < 19)
                w = w * 10 + (uint64_t)(*s - '0'), digits++, e10--;
            else
                exact = exact && *s == '0';
        }
    }
    if (!any) return 0;
    if (s < end && (*s == 'e' || *s == 'E')) {
        const char *q = s + 1;
        bool eneg = false;
        if (q < end && (*q == '+' || *q == '-')) eneg = *q++ == '-';
        if (q >= end || !is_digit(*q)) return 0; /* strtod stops before the 'e' */
        int ev = 0;
        for (; q < end && is_digit(*q); q++)
            if (ev < 100000) ev = ev * 10 + (*q - '0');
        e10 += eneg ? -ev : ev;
        s = q;
    }
    size_t len = (size_t)(s - p);
    if ((s < end && number_char(*s)) || len > 63) return 0;
    double d;
    uint64_t bits;
    if (w == 0)
        d = 0.0;
    else if (exact && w <= (1ull << 53) && e10 >= -22 && e10 <= 22)
        d = e10 < 0 ? (double)w / exact_pow10[-e10] : (double)w * exact_pow10[e10];
    else if (wp_num_decimal_to_f64(w, e10, !exact, &bits))
        d = wp_bits_f64(bits);
    else {
        char buf[64];
        memcpy(buf, p, len);
        buf[len] = 0;
        *out = strtod(buf, NULL);
        return len;
    }
    *out = neg ? -d : d;
    return len;
}

static inline void store_bits(void *base, size_t size, uint64_t i, uint64_t bits) {
    if (size == 4)
        ((uint32_t *)base)[i] = (uint32_t)bits;
    else if (size == 8)
        ((uint64_t *)base)[i] = bits;
    else
        ((uint16_t *)base)[i] = (uint16_t)bits;
}

#define WP_SCAN_STRING_MAX 128 /* longer strings (never a number) are left to cJSON */

/* d rounded once, to nearest even, into f16 or bf16, as wp_value_from_double does, for results in the
 * format's normal range (a carry into the exponent, up to the infinity, is that rounding too); false
 * for the rest (zeros, subnormals, NaN, overflow), which take wp_value_from_double. */
static inline bool small_from_double(double d, int frac_bits, int exp_bits, uint64_t *out) {
    const uint64_t b = wp_f64_bits(d), m = b & ((1ull << 52) - 1);
    const int e = (int)((b >> 52) & 0x7FF) - 1023, bias = (1 << (exp_bits - 1)) - 1, drop = 52 - frac_bits;
    if (e < 1 - bias || e > bias) return false;
    const uint64_t kept = m >> drop, rest = m & ((1ull << drop) - 1), half = 1ull << (drop - 1);
    uint64_t r = ((uint64_t)(e + bias) << frac_bits | kept) + (rest > half || (rest == half && (kept & 1)));
    *out = (b >> 48 & 0x8000) | r;
    return true;
}

/* A string of 1..18 plain decimal digits (a '-' first for signed types, no leading zero) as an integer
 * type's bits, as parse_int_text reads it; false for anything else, or out of range, which take
 * wp_json_string_to_bits (base prefixes, signs, spaces, errors). */
static inline bool plain_int(const char *s, size_t len, wp_type t, uint64_t *out) {
    const bool neg = len && s[0] == '-';
    if (neg && !wp_type_is_signed(t)) return false;
    s += neg, len -= neg;
    if (len == 0 || len > 18 || (s[0] == '0' && len > 1)) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(s[i])) return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if ((t == WP_I32 && v > (neg ? 0x80000000u : 0x7FFFFFFFu)) || (t == WP_U32 && v > UINT32_MAX)) return false;
    *out = (neg ? 0 - v : v) & wp_type_bitmask(t);
    return true;
}

/* A number's bits in type t, as wp_json_number_to_bits gives them (f32: straight from the double). */
static inline bool number_bits(double d, wp_type t, uint64_t *bits) {
    switch (t) {
    case WP_F32:
        *bits = wp_f32_bits((float)d);
        return true;
    case WP_F64:
        *bits = wp_f64_bits(d);
        return true;
    case WP_F16:
        if (small_from_double(d, 10, 5, bits)) return true;
        break;
    case WP_BF16:
        if (small_from_double(d, 7, 8, bits)) return true;
        break;
    case WP_I32: /* whole and in range: the cast is exact; the rest (and its message) below */
        if (d >= -2147483648.0 && d <= 2147483647.0 && d == (double)(int32_t)d) {
            *bits = (uint32_t)(int32_t)d;
            return true;
        }
        break;
    case WP_U32: /* -0 is refused below, as a negative value */
        if (!signbit(d) && d <= 4294967295.0 && d == (double)(uint32_t)d) {
            *bits = (uint32_t)d;
            return true;
        }
        break;
    default: /* 64-bit: whole and within 2^53, as wp_json_number_to_bits takes them */
        if (fabs(d) <= 9007199254740992.0 && d == (double)(int64_t)d && (t == WP_I64 || !signbit(d))) {
            *bits = (uint64_t)(int64_t)d;
            return true;
        }
        break;
    }
    return !wp_json_number_to_bits(d, t, "data", bits, NULL);
}

/* The values of a list between its brackets, [p, end) with end at the ']': values separated by commas,
 * whitespace as cJSON skips it, into out from index 0 (at most cap). false where the list reader
 * declines. A ']' or ',' inside a string ends the range early: such a string is never a value. */
static bool scan_values(const char *p, const char *end, wp_type t, void *out, uint64_t cap, uint64_t *count) {
    const size_t size = wp_type_size(t);
    for (uint64_t i = 0;; p++) {
        while (p < end && json_space(*p)) p++;
        if (p >= end || i >= cap) return false;
        uint64_t bits;
        if (*p == '-' || is_digit(*p)) {
            double d;
            size_t len = scan_number(p, end, &d);
            if (!len) return false;
            p += len;
            if (!number_bits(d, t, &bits)) return false;
        } else if (*p == '"') {
            const char *q = p + 1;
            while (q < end && *q != '"' && *q != '\\' && q - p <= WP_SCAN_STRING_MAX) q++;
            if (q >= end || *q != '"') return false;
            if (!wp_type_is_int(t) || !plain_int(p + 1, (size_t)(q - p - 1), t, &bits)) {
                char buf[WP_SCAN_STRING_MAX + 1];
                memcpy(buf, p + 1, (size_t)(q - p - 1));
                buf[q - p - 1] = 0;
                if (wp_json_string_to_bits(buf, t, "data", &bits, NULL)) return false;
            }
            p = q + 1;
        } else {
            return false; /* objects, lists, literals, or not JSON */
        }
        store_bits(out, size, i++, bits);
        while (p < end && json_space(*p)) p++;
        if (p == end) {
            *count = i;
            return true;
        }
        if (*p != ',') return false;
    }
}

typedef struct {
    const char *from, *to;
    wp_type t;
    void *out;
    uint64_t cap, count;
    bool ok;
} scan_part;

static void *scan_part_run(void *arg) {
    scan_part *s = arg;
    s->ok = s->out && scan_values(s->from, s->to, s->t, s->out, s->cap, &s->count);
    return NULL;
}

/* scan_values over k pieces of [from, to) cut after commas, each into its own buffer (the first into
 * out), joined in order: the same values, count and verdict as one pass. */
static bool scan_parallel(const char *from, const char *to, wp_type t, void *out, uint64_t cap, uint64_t *count,
                          int k) {
    scan_part parts[WP_LIST_THREADS_MAX];
    const size_t size = wp_type_size(t);
    int made = 0;
    for (const char *at = from; made < k;) {
        const char *cut = made + 1 < k ? from + (size_t)(to - from) * (size_t)(made + 1) / (size_t)k : to;
        const char *comma = cut < at ? at : cut;
        comma = comma < to ? memchr(comma, ',', (size_t)(to - comma)) : NULL;
        const char *piece_end = comma ? comma : to;
        uint64_t piece_cap = wp_json_array_cap((size_t)(piece_end - at));
        if (made == 0 && piece_cap > cap) piece_cap = cap;
        parts[made] = (scan_part){at, piece_end, t, made ? malloc((size_t)piece_cap * size) : out, piece_cap, 0, false};
        made++;
        if (!comma) break;
        at = comma + 1;
    }
    run_parts(scan_part_run, parts, sizeof parts[0], made);
    bool ok = true;
    uint64_t total = 0;
    for (int i = 0; i < made; i++) {
        ok = ok && parts[i].ok && parts[i].count <= cap - total;
        if (ok && i) memcpy((uint8_t *)out + total * size, parts[i].out, (size_t)parts[i].count * size);
        if (ok) total += parts[i].count;
        if (i) free(parts[i].out);
    }
    *count = total;
    return ok;
}

bool wp_json_scan_array(const char *text, size_t n, wp_type t, void *out, uint64_t cap, uint64_t *count, size_t *used) {
    if (n < 2 || text[0] != '[') return false;
    const char *close = memchr(text + 1, ']', n - 1), *p = text + 1;
    if (!close) return false;
    while (p < close && json_space(*p)) p++;
    uint64_t values = 0;
    if (p < close) {
        const int k = list_threads((uint64_t)(close - p) / WP_LIST_BYTES_PER_THREAD);
        if (!(k > 1 ? scan_parallel(p, close, t, out, cap, &values, k) : scan_values(p, close, t, out, cap, &values)))
            return false;
    }
    *count = values;
    *used = (size_t)(close + 1 - text);
    return true;
}
