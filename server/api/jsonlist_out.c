/* jsonlist_out.c — owns writing long lists of typed values as JSON text (jsonval.h's list half): packed
 * values as a "[v,v,...]" list, printed on up to WP_LIST_THREADS_MAX threads when it is long, the loop
 * made once per type. Each value's text is jsonval.c's (wp_json_bits_text), byte for byte. */
#include "jsonlist_impl.h"
#include "jsonval.h"
#include "util/numtext.h"

#include <stdlib.h>
#include <string.h>

/* The most bytes one value's text takes (jsonval.c's: "-2147483648", "\"-9223372036854775808\"",
 * "-1.17549435e-38", "-2.2250738585072014e-308", a half's table entry), and room past the last value
 * for the printers' block stores (WP_NUM_TEXT_MAX). */
static inline size_t text_most(wp_type t) {
    switch (t) {
    case WP_I32:
    case WP_U32:
        return 11;
    case WP_I64:
    case WP_U64:
        return 22;
    case WP_F32:
        return 16;
    case WP_F64:
        return 25;
    default:
        return WP_JSON_HALF_TEXT - 1;
    }
}
#define WP_LIST_SLACK 64

WP_INLINE uint64_t load_value(const uint8_t *data, uint64_t i, wp_type t) {
    if (type_size(t) == 8) {
        uint64_t v;
        memcpy(&v, data + i * 8, 8);
        return v;
    }
    if (type_size(t) == 4) {
        uint32_t v;
        memcpy(&v, data + i * 4, 4);
        return v;
    }
    uint16_t v;
    memcpy(&v, data + i * 2, 2);
    return v;
}

/* One value's text at p (jsonval.c's wp_json_bits_text, byte for byte); returns its end. */
WP_INLINE char *put_value(char *p, wp_type t, uint64_t bits, const wp_json_half_text *half) {
    switch (t) {
    case WP_I32:
        return p + wp_num_i64_text(p, (int32_t)(uint32_t)bits);
    case WP_U32:
        return p + wp_num_u64_text(p, (uint32_t)bits);
    case WP_I64: /* 64-bit integers are strings (DESIGN.md §4) */
    case WP_U64: {
        *p = '"';
        const int n = t == WP_I64 ? wp_num_i64_text(p + 1, (int64_t)bits) : wp_num_u64_text(p + 1, bits);
        p[n + 1] = '"';
        return p + n + 2;
    }
    case WP_F16:
    case WP_BF16: {
        const char *entry = half[bits & 0xFFFF];
        memcpy(p, entry, WP_JSON_HALF_TEXT);
        return p + entry[WP_JSON_HALF_TEXT - 1];
    }
    default:
        return p + wp_json_float_text(t, bits, p);
    }
}

/* n values' texts separated by commas at p (room for n * (text_most + 1) + WP_LIST_SLACK); returns the end. */
WP_INLINE char *put_typed(char *p, wp_type t, const uint8_t *data, uint64_t n) {
    const wp_json_half_text *half = t == WP_F16 || t == WP_BF16 ? wp_json_half_texts(t) : NULL;
    for (uint64_t i = 0; i < n; i++) {
        *p = ',';
        p += i != 0;
        p = put_value(p, t, load_value(data, i, t), half);
    }
    return p;
}

static char *put_values(char *p, wp_type t, const uint8_t *data, uint64_t n) {
    switch (t) {
    case WP_I32:
        return put_typed(p, WP_I32, data, n);
    case WP_U32:
        return put_typed(p, WP_U32, data, n);
    case WP_I64:
        return put_typed(p, WP_I64, data, n);
    case WP_U64:
        return put_typed(p, WP_U64, data, n);
    case WP_F32:
        return put_typed(p, WP_F32, data, n);
    case WP_F64:
        return put_typed(p, WP_F64, data, n);
    case WP_F16:
        return put_typed(p, WP_F16, data, n);
    default:
        return put_typed(p, WP_BF16, data, n);
    }
}

typedef struct {
    wp_type t;
    const uint8_t *data;
    uint64_t n;
    char *at, *end;
} print_part;

static void *print_part_run(void *arg) {
    print_part *s = arg;
    s->end = put_values(s->at, s->t, s->data, s->n);
    return NULL;
}

/* k runs of values printed side by side, each into a buffer of its own (room for its longest texts);
 * false when one cannot be had (the others freed). */
static bool print_parts(print_part *parts, wp_type t, const uint8_t *data, uint64_t n, int k) {
    const size_t size = type_size(t), most = text_most(t) + 1;
    bool ok = true;
    for (int i = 0; i < k; i++) {
        const uint64_t from = n * (uint64_t)i / (uint64_t)k, to = n * (uint64_t)(i + 1) / (uint64_t)k;
        char *buf = malloc((size_t)(to - from) * most + WP_LIST_SLACK);
        ok = ok && buf;
        parts[i] = (print_part){t, data + from * size, to - from, buf, buf};
    }
    if (ok) wp_list_run_parts(print_part_run, parts, sizeof parts[0], k);
    for (int i = 0; !ok && i < k; i++) free(parts[i].at);
    return ok;
}

/* The printed runs as one list at the end of out, each copied into place by its own thread. out takes
 * room for the texts as they came out, not for the longest the type has: 10^6 values would otherwise
 * ask for tens of MB, past what malloc reuses, and take fresh pages every answer. */
static bool join_parts(wp_jtext *out, const print_part *parts, int k) {
    wp_list_copy copies[WP_LIST_THREADS_MAX];
    size_t total = 2 + (size_t)(k - 1); /* the brackets and the commas between the runs */
    for (int i = 0; i < k; i++) total += (size_t)(parts[i].end - parts[i].at);
    char *p = wp_jtext_room(out, total);
    if (!p) return false;
    *p++ = '[';
    for (int i = 0; i < k; i++) { /* every part has values: k <= n / WP_LIST_VALUES_PER_THREAD */
        const size_t len = (size_t)(parts[i].end - parts[i].at);
        if (i) *p++ = ',';
        copies[i] = (wp_list_copy){p, parts[i].at, len};
        p += len;
    }
    *p++ = ']';
    wp_list_run_parts(wp_list_copy_run, copies, sizeof copies[0], k);
    out->n = (size_t)(p - out->p);
    return true;
}

bool wp_json_append_values(wp_jtext *out, wp_type t, const void *data, uint64_t n) {
    print_part parts[WP_LIST_THREADS_MAX];
    const int k = wp_list_threads(n / WP_LIST_VALUES_PER_THREAD); /* each part has values */
    if (k > 1 && print_parts(parts, t, data, n, k)) {
        const bool ok = join_parts(out, parts, k);
        for (int i = 0; i < k; i++) free(parts[i].at);
        return ok;
    }
    /* one thread (or the parts' buffers were not had): straight into out */
    char *room = wp_jtext_room(out, (size_t)n * (text_most(t) + 1) + 2 + WP_LIST_SLACK);
    if (!room) return false;
    room[0] = '[';
    char *end = put_values(room + 1, t, data, n);
    *end++ = ']';
    out->n = (size_t)(end - out->p);
    return true;
}

cJSON *wp_json_values_raw(wp_type t, const void *data, uint64_t n) {
    wp_jtext text = {0};
    if (!wp_json_append_values(&text, t, data, n)) {
        free(text.p);
        return NULL;
    }
    return wp_jtext_raw(&text);
}
