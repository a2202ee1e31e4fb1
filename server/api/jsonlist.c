/* jsonlist.c — owns reading long lists of typed values from JSON text (jsonval.h's list half): a "data"
 * list read in place into packed values, on up to WP_LIST_THREADS_MAX threads when it is long; and the
 * threads a long list's pieces run on (jsonlist_impl.h; the writer is jsonlist_out.c). The loop is made
 * once per type (the type is a constant inside it: no switch, no size test per value); numbers are
 * read eight digits a step. One value's rules are jsonval.c's, which the loop gives bit for bit. */
#include "jsonlist_impl.h"
#include "jsonval.h"
#include "util/numtext.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a long list on several threads ---- */

int wp_list_threads(uint64_t units) {
    if (units < 2) return 1; /* every small request: no look at the CPUs (sysconf reads /sys: a file a call) */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t k = units < WP_LIST_THREADS_MAX ? units : WP_LIST_THREADS_MAX;
    if (cpus > 0 && k > (uint64_t)cpus) k = (uint64_t)cpus;
    return k > 1 ? (int)k : 1;
}

void wp_list_run_parts(void *(*fn)(void *), void *parts, size_t part_size, int k) {
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

void *wp_list_copy_run(void *arg) {
    const wp_list_copy *c = arg;
    if (c->n) memcpy(c->to, c->from, c->n);
    return NULL;
}

static inline uint64_t width_bits(wp_type t, uint64_t v) { return type_size(t) == 8 ? v : (uint32_t)v; }

/* ---- reading: one number ---- */

static inline bool json_space(char c) { return (unsigned char)c <= 32; } /* what cJSON skips */
static inline bool is_digit(char c) { return (unsigned char)(c - '0') < 10; }
static inline bool number_char(char c) { /* what cJSON copies into a number before strtod */
    return is_digit(c) || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

/* 10^0 .. 10^22: every one exact in a double. */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const uint32_t pow10_u32[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
#define TWO_53 9007199254740992ull

/* The 8 bytes at s as a word, the first byte lowest. */
static inline uint64_t load8(const char *s) {
    uint64_t v;
    memcpy(&v, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The bytes of v (the first lowest) that are not ASCII digits, as non-zero bytes: a byte is a digit
 * when its high nibble and that of byte + 6 are both 3. A carry out of a byte of 0xFA or more reaches
 * only later bytes, after a non-digit: the first non-zero byte is the first non-digit. */
static inline uint64_t non_digits(uint64_t v) {
    const uint64_t high = 0xF0F0F0F0F0F0F0F0ull;
    return ((v & high) | (((v + 0x0606060606060606ull) & high) >> 4)) ^ 0x3333333333333333ull;
}

/* The value of the first n (1..8) digits of v: shifted to the top (zeros before them), then pairs,
 * fours and eight by three multiplications. */
static inline uint32_t run_value(uint64_t v, int n) {
    v = (v - 0x3030303030303030ull) << (64 - 8 * n); /* a borrow from a byte past the digits goes up, out */
    v = v * 10 + (v >> 8);
    v = ((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32)) +
         ((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32))) >>
        32;
    return (uint32_t)v;
}

/* The digits at s, eight a step, added to *w (*nd counts them, leading zeros too); returns where they
 * end, or NULL when there would be more than 19 in all or a step would read past limit. A digit run
 * always stops before the list's end (a ']' or ','), so reading up to limit is only a bound. Eight
 * digits is a branch (predicted: the next step's load does not wait for this one's count). */
WP_INLINE const char *digit_runs(const char *s, const char *limit, uint64_t *w, int *nd) {
    for (;; s += 8) {
        if (limit - s < 8) return NULL;
        const uint64_t v = load8(s), other = non_digits(v);
        if (!other) {
            if (*nd > 11) return NULL;
            *w = *w * 100000000 + run_value(v, 8);
            *nd += 8;
            continue;
        }
        const int n = __builtin_ctzll(other) >> 3;
        if (*nd + n > 19) return NULL;
        if (n) *w = *w * pow10_u32[n] + run_value(v, n), *nd += n;
        return s + n;
    }
}

/* A number of at most 19 digits as exact decimal: w * 10^e10, with its sign; whole when it has no
 * point and no exponent. */
typedef struct {
    uint64_t w;
    int e10;
    bool neg, whole;
} decimal;

/* The exponent after an 'e' at s, as cJSON's strtod reads it, added to *e10; NULL when no digit follows. */
static inline const char *exponent(const char *s, const char *end, int *e10) {
    const char *q = s + 1;
    bool eneg = false;
    if (q < end && (*q == '+' || *q == '-')) eneg = *q++ == '-';
    if (q >= end || !is_digit(*q)) return NULL; /* strtod stops before the 'e' */
    int ev = 0;
    for (; q < end && is_digit(*q); q++)
        if (ev < 100000) ev = ev * 10 + (*q - '0');
    *e10 += eneg ? -ev : ev;
    return q;
}

/* The usual number, in eight-digit steps: [-]digits[.digits][e[+-]digits] with 19 digits or fewer in
 * all. Returns its length, or 0 for anything else (slow_number decides those). */
WP_INLINE size_t quick_number(const char *p, const char *end, const char *limit, decimal *d) {
    const char *s = p + (*p == '-');
    uint64_t w = 0;
    int nd = 0, e10 = 0;
    if (s[0] == '0' && s[1] == '.') /* the whole part of most values in (-1, 1): no step to count it */
        s++, nd = 1;
    else if (!(s = digit_runs(s, limit, &w, &nd)) || nd == 0)
        return 0;
    const int whole_digits = nd;
    bool whole = true;
    if (s < end && *s == '.') {
        if (!(s = digit_runs(s + 1, limit, &w, &nd)) || nd == whole_digits) return 0; /* "1.": the slow way */
        e10 = whole_digits - nd;
        whole = false;
    }
    if (s < end && (*s | 0x20) == 'e') {
        if (!(s = exponent(s, end, &e10))) return 0;
        whole = false;
    }
    const size_t len = (size_t)(s - p);
    if ((s < end && number_char(*s)) || len > 63) return 0;
    *d = (decimal){w, e10, *p == '-', whole};
    return len;
}

/* The double nearest w * 10^e10, as strtod gives it: Clinger's exact case (a mantissa within 2^53 and
 * a power of ten within 10^±22 are both exact doubles: one operation rounds once), else Eisel-Lemire
 * (util/numtext.c); false where that cannot tell (past 10^±308, or more than 19 digits that round two
 * ways): then strtod. */
static inline bool decimal_double(uint64_t w, int e10, bool exact, double *d) {
    uint64_t bits;
    if (w == 0)
        *d = 0.0;
    else if (exact && w <= TWO_53 && e10 >= -22 && e10 <= 22)
        *d = e10 < 0 ? (double)w / exact_pow10[-e10] : (double)w * exact_pow10[e10];
    else if (wp_num_decimal_to_f64(w, e10, !exact, &bits))
        *d = wp_bits_f64(bits);
    else
        return false;
    return true;
}

/* One number as cJSON reads it, the general way: the run of number_char (at most 63 of them) through
 * strtod, which must take the whole run (else cJSON stops inside it and the array is invalid). Returns
 * the run's length, or 0 when cJSON would not read exactly one number here. The first 19 significant
 * digits are kept; past them, whether the rest are zeros (exact) or not. */
static size_t slow_number(const char *p, const char *end, double *out) {
    const char *s = p;
    bool neg = *s == '-';
    if (neg) s++;
    uint64_t w = 0;
    int digits = 0, e10 = 0;
    bool any = false, exact = true;
    for (; s < end && is_digit(*s); s++) {
        any = true;
        if (w == 0 && *s == '0') continue;
        if (digits < 19)
            w = w * 10 + (uint64_t)(*s - '0'), digits++;
        else
            e10++, exact = exact && *s == '0';
    }
    if (s < end && *s == '.') {
        for (s++; s < end && is_digit(*s); s++) {
            any = true;
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
    if (!any || (s < end && (*s | 0x20) == 'e' && !(s = exponent(s, end, &e10)))) return 0;
    size_t len = (size_t)(s - p);
    if ((s < end && number_char(*s)) || len > 63) return 0;
    double d;
    if (!decimal_double(w, e10, exact, &d)) {
        char buf[64];
        memcpy(buf, p, len);
        buf[len] = 0;
        *out = strtod(buf, NULL);
        return len;
    }
    *out = neg ? -d : d;
    return len;
}

/* ---- reading: one value as bits of a type ---- */

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

/* A number's bits in type t, as wp_json_number_to_bits gives them (f32: straight from the double). */
WP_INLINE bool number_bits(double d, wp_type t, uint64_t *bits) {
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

/* A whole number of digits into an integer type without a double: what number_bits makes of the
 * (exact) double -w or w; false for what it refuses or must say more about (a minus for an unsigned
 * type, -0 included; out of range; past 2^53), which then takes that way. */
WP_INLINE bool whole_bits(uint64_t w, bool neg, wp_type t, uint64_t *bits) {
    switch (t) {
    case WP_I32:
        if (w > (neg ? 0x80000000u : 0x7FFFFFFFu)) return false;
        *bits = (uint32_t)(neg ? 0 - w : w);
        return true;
    case WP_U32:
        if (neg || w > UINT32_MAX) return false;
        *bits = w;
        return true;
    case WP_I64:
        if (w > TWO_53) return false;
        *bits = neg ? 0 - w : w;
        return true;
    default:
        if (neg || w > TWO_53) return false;
        *bits = w;
        return true;
    }
}

/* The number at p as type t's bits; its length, or 0 (the reader declines). */
WP_INLINE size_t number_value(const char *p, const char *end, const char *limit, wp_type t, uint64_t *bits) {
    decimal q;
    double d;
    size_t len = quick_number(p, end, limit, &q);
    if (len && int_type(t) && q.whole && whole_bits(q.w, q.neg, t, bits)) return len;
    if (len && decimal_double(q.w, q.e10, true, &d))
        d = q.neg ? -d : d;
    else if (!(len = slow_number(p, end, &d)))
        return 0;
    return number_bits(d, t, bits) ? len : 0;
}

/* ---- reading: a list ---- */

#define WP_SCAN_STRING_MAX 128 /* longer strings (never a number) are left to cJSON */

/* A string of 1..18 plain decimal digits (a '-' first for signed types, no leading zero) as an integer
 * type's bits, as parse_int_text reads it; false for anything else, or out of range, which take
 * wp_json_string_to_bits (base prefixes, signs, spaces, errors). */
WP_INLINE bool plain_int(const char *s, size_t len, wp_type t, uint64_t *out) {
    const bool neg = len && s[0] == '-';
    if (neg && t != WP_I32 && t != WP_I64) return false;
    s += neg, len -= neg;
    if (len == 0 || len > 18 || (s[0] == '0' && len > 1)) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(s[i])) return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if ((t == WP_I32 && v > (neg ? 0x80000000u : 0x7FFFFFFFu)) || (t == WP_U32 && v > UINT32_MAX)) return false;
    *out = width_bits(t, neg ? 0 - v : v);
    return true;
}

/* The same, in eight-digit steps, for a string at p ('"') that is only such digits: its length with
 * both quotes, or 0 (then the way above). The digits stop at the list's end at the latest (a ']' or
 * ','), so a closing quote found is inside it. */
WP_INLINE size_t quick_int_string(const char *p, const char *limit, wp_type t, uint64_t *bits) {
    const char *s = p + 1, *e;
    const bool neg = *s == '-';
    uint64_t v = 0;
    int nd = 0;
    if (neg && t != WP_I32 && t != WP_I64) return 0;
    s += neg;
    if (!(e = digit_runs(s, limit, &v, &nd)) || *e != '"' || nd == 0 || nd > 18 || (*s == '0' && nd > 1)) return 0;
    if ((t == WP_I32 && v > (neg ? 0x80000000u : 0x7FFFFFFFu)) || (t == WP_U32 && v > UINT32_MAX)) return 0;
    *bits = width_bits(t, neg ? 0 - v : v);
    return (size_t)(e + 1 - p);
}

/* The string at p ('"') as type t's bits, as wp_json_string_to_bits reads it; its length, or 0. */
WP_INLINE size_t string_value(const char *p, const char *end, const char *limit, wp_type t, uint64_t *bits) {
    size_t len = int_type(t) ? quick_int_string(p, limit, t, bits) : 0;
    if (len) return len;
    const char *q = p + 1;
    while (q < end && *q != '"' && *q != '\\' && q - p <= WP_SCAN_STRING_MAX) q++;
    if (q >= end || *q != '"') return 0;
    if (!int_type(t) || !plain_int(p + 1, (size_t)(q - p - 1), t, bits)) {
        char buf[WP_SCAN_STRING_MAX + 1];
        memcpy(buf, p + 1, (size_t)(q - p - 1));
        buf[q - p - 1] = 0;
        if (wp_json_string_to_bits(buf, t, "data", bits, NULL)) return 0;
    }
    return (size_t)(q + 1 - p);
}

WP_INLINE void store_value(void *base, uint64_t i, wp_type t, uint64_t bits) {
    if (type_size(t) == 8)
        ((uint64_t *)base)[i] = bits;
    else if (type_size(t) == 4)
        ((uint32_t *)base)[i] = (uint32_t)bits;
    else
        ((uint16_t *)base)[i] = (uint16_t)bits;
}

/* The values of a list between its brackets, [p, end) with end at the ']' (or a ',' where a piece of
 * it is cut), bytes readable up to limit: values separated by commas, whitespace as cJSON skips it,
 * into out from index 0 (at most cap). false where the list reader declines. A ']' or ',' inside a
 * string ends the range early: such a string is never a value. */
WP_INLINE bool scan_typed(const char *p, const char *end, const char *limit, wp_type t, void *out, uint64_t cap,
                          uint64_t *count) {
    for (uint64_t i = 0;; p++) {
        while (p < end && json_space(*p)) p++;
        if (p >= end || i >= cap) return false;
        uint64_t bits;
        size_t len;
        if (*p == '-' || is_digit(*p))
            len = number_value(p, end, limit, t, &bits);
        else if (*p == '"')
            len = string_value(p, end, limit, t, &bits);
        else
            return false; /* objects, lists, literals, or not JSON */
        if (!len) return false;
        p += len;
        store_value(out, i++, t, bits);
        while (p < end && json_space(*p)) p++;
        if (p == end) {
            *count = i;
            return true;
        }
        if (*p != ',') return false;
    }
}

static bool scan_values(const char *p, const char *end, const char *limit, wp_type t, void *out, uint64_t cap,
                        uint64_t *count) {
    switch (t) {
    case WP_I32:
        return scan_typed(p, end, limit, WP_I32, out, cap, count);
    case WP_U32:
        return scan_typed(p, end, limit, WP_U32, out, cap, count);
    case WP_I64:
        return scan_typed(p, end, limit, WP_I64, out, cap, count);
    case WP_U64:
        return scan_typed(p, end, limit, WP_U64, out, cap, count);
    case WP_F32:
        return scan_typed(p, end, limit, WP_F32, out, cap, count);
    case WP_F64:
        return scan_typed(p, end, limit, WP_F64, out, cap, count);
    case WP_F16:
        return scan_typed(p, end, limit, WP_F16, out, cap, count);
    case WP_BF16:
        return scan_typed(p, end, limit, WP_BF16, out, cap, count);
    default:
        return false;
    }
}

typedef struct {
    const char *from, *to, *limit;
    wp_type t;
    void *out;
    uint64_t cap, count;
    bool ok;
} scan_part;

static void *scan_part_run(void *arg) {
    scan_part *s = arg;
    s->ok = s->out && scan_values(s->from, s->to, s->limit, s->t, s->out, s->cap, &s->count);
    return NULL;
}

/* Phase one of a long list: k pieces of [from, to), cut after commas, each read into a buffer of its
 * own by its own thread. Returns how many pieces were made (*total: their values, when every one read). */
static int scan_pieces(const char *from, const char *to, const char *limit, wp_type t, int k, scan_part *parts,
                       uint64_t *total) {
    int made = 0;
    for (const char *at = from; made < k;) {
        const char *cut = made + 1 < k ? from + (size_t)(to - from) * (size_t)(made + 1) / (size_t)k : to;
        const char *comma = cut < at ? at : cut;
        comma = comma < to ? memchr(comma, ',', (size_t)(to - comma)) : NULL;
        const char *piece_end = comma ? comma : to;
        const uint64_t piece_cap = wp_json_array_cap((size_t)(piece_end - at));
        parts[made++] =
            (scan_part){at, piece_end, limit, t, malloc((size_t)piece_cap * type_size(t)), piece_cap, 0, false};
        if (!comma) break;
        at = comma + 1;
    }
    wp_list_run_parts(scan_part_run, parts, sizeof parts[0], made);
    bool ok = true;
    *total = 0;
    for (int i = 0; i < made; i++) ok = ok && parts[i].ok, *total += parts[i].count;
    if (!ok) *total = UINT64_MAX;
    return made;
}

/* Phase two: the pieces' values one after another at out, each piece copied by its own thread; the
 * pieces' buffers freed. */
static void gather_pieces(scan_part *parts, int made, void *out) {
    wp_list_copy copies[WP_LIST_THREADS_MAX] = {{0}};
    const size_t size = type_size(parts[0].t);
    uint64_t at = 0;
    for (int i = 0; i < made; i++) {
        copies[i] = (wp_list_copy){(uint8_t *)out + at * size, parts[i].out, (size_t)parts[i].count * size};
        at += parts[i].count;
    }
    if (out) wp_list_run_parts(wp_list_copy_run, copies, sizeof copies[0], made);
    for (int i = 0; i < made; i++) free(parts[i].out);
}

/* The list at text: where its values start (past the '[' and whitespace) and its ']'; false when it has
 * none. */
static bool list_span(const char *text, size_t n, const char **first, const char **close) {
    if (n < 2 || text[0] != '[' || !(*close = memchr(text + 1, ']', n - 1))) return false;
    for (*first = text + 1; *first < *close && json_space(**first);) ++*first;
    return true;
}

/* How many threads the values in [p, close) get. */
static int scan_threads(const char *p, const char *close) {
    return p < close ? wp_list_threads((uint64_t)(close - p) / WP_LIST_BYTES_PER_THREAD) : 1;
}

bool wp_json_scan_array(const char *text, size_t n, wp_type t, void *out, uint64_t cap, uint64_t *count, size_t *used) {
    const char *p, *close;
    if (!list_span(text, n, &p, &close)) return false;
    uint64_t values = 0;
    const int k = scan_threads(p, close);
    if (k > 1) {
        scan_part parts[WP_LIST_THREADS_MAX];
        const int made = scan_pieces(p, close, text + n, t, k, parts, &values);
        gather_pieces(parts, made, values <= cap ? out : NULL);
        if (values > cap) return false;
    } else if (p < close && !scan_values(p, close, text + n, t, out, cap, &values)) {
        return false;
    }
    *count = values;
    *used = (size_t)(close + 1 - text);
    return true;
}

bool wp_json_scan_array_new(const char *text, size_t n, wp_type t, void **out, uint64_t *count, size_t *used) {
    const char *p, *close;
    *out = NULL;
    if (!list_span(text, n, &p, &close)) return false;
    uint64_t values = 0;
    const int k = scan_threads(p, close);
    if (k > 1) {
        scan_part parts[WP_LIST_THREADS_MAX];
        const int made = scan_pieces(p, close, text + n, t, k, parts, &values);
        *out = values != UINT64_MAX ? malloc(values ? (size_t)values * type_size(t) : 1) : NULL;
        gather_pieces(parts, made, *out);
    } else { /* room for the most values the text can hold, then the rest given back */
        const uint64_t cap = wp_json_array_cap((size_t)(close - p));
        void *fit = NULL;
        *out = malloc((size_t)cap * type_size(t));
        if (*out && (p == close || scan_values(p, close, text + n, t, *out, cap, &values)))
            fit = realloc(*out, values ? (size_t)values * type_size(t) : 1);
        else
            free(*out), *out = NULL;
        if (fit) *out = fit;
    }
    if (!*out) return false;
    *count = values;
    *used = (size_t)(close + 1 - text);
    return true;
}
