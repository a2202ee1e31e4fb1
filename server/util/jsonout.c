/* jsonout.c — owns printing JSON text: a cJSON tree to cJSON_PrintUnformatted's exact bytes, faster
 * (see jsonout.h), and integers to decimal text. cJSON spends a printf, a sscanf and a locale look-up
 * on every non-integral number (a response's timing object has eleven); here a number that is a whole
 * count of thousandths (every timing value) is written digit by digit, and the rest take cJSON's own
 * two printf steps with strtod for the read-back. */
#include "jsonout.h"
#include "numtext.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef wp_jtext out_buf;

/* Room for more bytes and a NUL: a first piece of up to 1 KiB gets 1 KiB; then the capacity doubles,
 * but a piece larger than that at once (a long list) gets what it needs and an eighth more: a
 * 10^6-value list's answer then stays within what malloc keeps for reuse, where the next power of two
 * could take fresh pages every time. */
static bool reserve(out_buf *b, size_t more) {
    if (b->failed) return false;
    if (b->n + more + 1 <= b->cap) return true;
    const size_t need = b->n + more + 1;
    size_t cap = b->cap ? b->cap : 256;
    if (!b->cap && need <= 1024)
        cap = 1024; /* a small answer's first piece: glibc keeps 1 KiB blocks in a per-thread cache, not larger */
    else if (need / 2 > cap)
        cap = need + need / 8;
    while (cap < need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return !(b->failed = 1);
    b->p = p, b->cap = cap;
    return true;
}
static void put(out_buf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void putc_(out_buf *b, char c) {
    if (reserve(b, 1)) b->p[b->n++] = c;
}

int wp_json_fmt_u64(char *buf, uint64_t v) { return wp_num_u64_text(buf, v); }

int wp_json_fmt_i64(char *buf, int64_t v) { return wp_num_i64_text(buf, v); }

/* d as %1.15g would print it, when d is the double nearest k/1000 for an integer |k| < 10^15: such a
 * decimal has at most 15 significant digits, so %1.15g gives it back exactly (DBL_DIG), in fixed
 * notation (its exponent lies in -3..11), trailing zeros dropped; and it reads back to d. */
static int milli_text(double d, char *buf) {
    if (!(fabs(d) < 1e12)) return -1;
    /* any k that passes the check below is the one: distinct k give distinct k/1000 below 10^15 */
    const long long k = (long long)(d * 1000.0 + (d < 0 ? -0.5 : 0.5));
    if ((double)k / 1000.0 != d) return -1;
    int n = 0;
    if (k < 0) buf[n++] = '-';
    unsigned long long a = k < 0 ? 0ull - (unsigned long long)k : (unsigned long long)k;
    n += wp_json_fmt_u64(buf + n, a / 1000);
    unsigned frac = (unsigned)(a % 1000);
    if (frac) {
        buf[n++] = '.';
        buf[n++] = (char)('0' + frac / 100);
        if (frac % 100) buf[n++] = (char)('0' + frac / 10 % 10);
        if (frac % 10) buf[n++] = (char)('0' + frac % 10);
        buf[n] = 0;
    }
    return n;
}

/* cJSON's compare_double */
static bool near_equal(double a, double b) {
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= m * DBL_EPSILON;
}

/* cJSON 1.7.15 (Debian 12's): NaN and infinities as null; else %1.15g unless that reads back to
 * another double, then %1.17g. */
static bool put_number(out_buf *b, double d) {
    if (!reserve(b, 32)) return true; /* remembered */
    char *t = b->p + b->n;            /* written in place: a small answer's dozen numbers, no copy each */
    int n;
    if (isnan(d) || isinf(d)) {
        memcpy(t, "null", 4);
        b->n += 4;
        return true;
    }
    if (d == 0)
        n = signbit(d) ? (memcpy(t, "-0", 3), 2) : (memcpy(t, "0", 2), 1); /* %1.15g keeps the sign */
    else if (fabs(d) < 1e15 && d == (double)(int64_t)d)
        n = wp_json_fmt_i64(t, (int64_t)d); /* at most 15 digits: %1.15g prints them all */
    else if ((n = milli_text(d, t)) < 0) {
        n = snprintf(t, 26, "%1.15g", d);
        char *end;
        double back = strtod(t, &end);
        if (end == t || !near_equal(back, d)) n = snprintf(t, 26, "%1.17g", d);
    }
    if (n < 0 || n > 25) return false; /* as cJSON: it prints into 26 bytes */
    b->n += (size_t)n;
    return true;
}

/* Whether a byte goes into a JSON string as it is (not a control character, '"' or '\\'): one load a
 * byte in plain_run, where three compares cost twice the instructions (keys and short values are most
 * of a small answer's bytes). */
#define PLAIN_ROW(c) c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c
/* clang-format off */
static const unsigned char plain_byte[256] = {
    PLAIN_ROW(0), PLAIN_ROW(0), 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 32..47: '"' */
    PLAIN_ROW(1), PLAIN_ROW(1), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 80..95: '\\' */
    PLAIN_ROW(1), PLAIN_ROW(1), PLAIN_ROW(1), PLAIN_ROW(1), PLAIN_ROW(1), PLAIN_ROW(1), PLAIN_ROW(1),
    PLAIN_ROW(1), PLAIN_ROW(1), PLAIN_ROW(1)};
/* clang-format on */
#undef PLAIN_ROW

/* The plain bytes at the start of u: those a JSON string holds as they are. */
static inline size_t plain_run(const unsigned char *u) {
    size_t n = 0;
    while (plain_byte[u[n]]) n++;
    return n;
}

static void put_string(out_buf *b, const char *s) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t plain = plain_run(u);
    if (!u[plain]) { /* nothing to escape (every key and most values): one copy */
        if (!reserve(b, plain + 2)) return;
        char *d = b->p + b->n;
        d[0] = '"';
        memcpy(d + 1, u, plain);
        d[plain + 1] = '"';
        b->n += plain + 2;
        return;
    }
    putc_(b, '"');
    for (;;) {
        const unsigned char *run = u;
        while (*u > 31 && *u != '"' && *u != '\\') u++;
        put(b, (const char *)run, (size_t)(u - run));
        if (!*u) break;
        static const char shortened[] = "\"\\\b\f\n\r\t", as[] = "\"\\bfnrt"; /* cJSON's two-byte escapes */
        const char *k = memchr(shortened, *u, sizeof shortened - 1);
        char e[6] = {'\\', k ? as[k - shortened] : 'u', '0', '0', hex[*u >> 4], hex[*u & 15]};
        put(b, e, k ? 2 : 6);
        u++;
    }
    putc_(b, '"');
}

static bool put_value(out_buf *b, const cJSON *it) {
    switch (it->type & 0xFF) {
    case cJSON_NULL:
        put(b, "null", 4);
        return true;
    case cJSON_False:
        put(b, "false", 5);
        return true;
    case cJSON_True:
        put(b, "true", 4);
        return true;
    case cJSON_Number:
        return put_number(b, it->valuedouble);
    case cJSON_Raw:
        if (!it->valuestring) return false;
        put(b, it->valuestring, strlen(it->valuestring));
        return true;
    case cJSON_String:
        put_string(b, it->valuestring);
        return true;
    case cJSON_Array:
    case cJSON_Object: {
        bool obj = (it->type & 0xFF) == cJSON_Object;
        putc_(b, obj ? '{' : '[');
        for (const cJSON *c = it->child; c; c = c->next) {
            if (obj) {
                put_string(b, c->string);
                putc_(b, ':');
            }
            if (!put_value(b, c)) return false;
            if (c->next) putc_(b, ',');
        }
        putc_(b, obj ? '}' : ']');
        return true;
    }
    default:
        return false;
    }
}

void wp_jtext_put(wp_jtext *t, const char *s, size_t n) { put(t, s, n); }
void wp_jtext_str(wp_jtext *t, const char *s) { put_string(t, s); }

char *wp_jtext_room(wp_jtext *t, size_t n) { return reserve(t, n) ? t->p + t->n : NULL; }

/* cJSON frees an item's valuestring with its hooks, which warpd leaves at malloc/free (it never calls
 * cJSON_InitHooks), so the builder's buffer can become the item's text as it is. */
cJSON *wp_jtext_raw(wp_jtext *t) {
    cJSON *raw = reserve(t, 0) ? cJSON_CreateRaw("") : NULL;
    if (raw) {
        t->p[t->n] = 0;
        free(raw->valuestring);
        raw->valuestring = t->p;
    } else {
        free(t->p);
    }
    *t = (wp_jtext){0};
    return raw;
}

/* ---- answers as text (jsonout.h) ---- */

/* The ',' before a value or a key, unless it opens its object or list or follows its key. */
static inline void sep(out_buf *b) {
    if (b->n && !b->failed) {
        char c = b->p[b->n - 1];
        if (c != '{' && c != '[' && c != ':' && c != ',') putc_(b, ',');
    }
}

void wp_jtext_open(wp_jtext *t, char c) {
    if (!t->cap) reserve(t, 1023); /* an answer's first piece: room for a small answer, no realloc */
    sep(t);
    putc_(t, c);
}
void wp_jtext_close(wp_jtext *t, char c) { putc_(t, c); }
void wp_jtext_key(wp_jtext *t, const char *key) {
    sep(t);
    const unsigned char *u = (const unsigned char *)(key ? key : "");
    size_t plain = plain_run(u);
    if (!u[plain] && reserve(t, plain + 3)) { /* "key": in one copy */
        char *d = t->p + t->n;
        d[0] = '"';
        memcpy(d + 1, u, plain);
        memcpy(d + plain + 1, "\":", 2);
        t->n += plain + 3;
        return;
    }
    put_string(t, key);
    putc_(t, ':');
}
void wp_jtext_num(wp_jtext *t, double v) {
    sep(t);
    if (!put_number(t, v)) t->failed = 1; /* never: %1.17g fits; cJSON would refuse the tree */
}
void wp_jtext_sval(wp_jtext *t, const char *s) {
    sep(t);
    if (s)
        put_string(t, s);
    else
        put(t, "null", 4);
}
void wp_jtext_text(wp_jtext *t, const char *json, size_t n) {
    sep(t);
    put(t, json, n);
}
bool wp_jtext_json(wp_jtext *t, const cJSON *item) {
    sep(t);
    if (!item || !put_value(t, item)) t->failed = 1;
    return !t->failed;
}
bool wp_jtext_members(wp_jtext *t, const cJSON *obj) {
    if (!cJSON_IsObject(obj)) return !(t->failed = 1);
    for (const cJSON *c = obj->child; c && !t->failed; c = c->next) {
        wp_jtext_key(t, c->string);
        if (!put_value(t, c)) t->failed = 1;
    }
    return !t->failed;
}
void wp_jtext_qnum(wp_jtext *t, const char *q, size_t n, double v) {
    wp_jtext_qkey(t, q, n);
    if (!put_number(t, v)) t->failed = 1;
}
void wp_jtext_qstr(wp_jtext *t, const char *q, size_t n, const char *s) {
    if (!s) return;
    wp_jtext_qkey(t, q, n);
    put_string(t, s);
}
void wp_jtext_qbool(wp_jtext *t, const char *q, size_t n, bool v) {
    wp_jtext_qkey(t, q, n);
    if (v)
        put(t, "true", 4);
    else
        put(t, "false", 5);
}
void wp_jtext_qnull(wp_jtext *t, const char *q, size_t n) {
    wp_jtext_qkey(t, q, n);
    put(t, "null", 4);
}
void wp_jtext_qnum_or_null(wp_jtext *t, const char *q, size_t n, bool has, double v) {
    if (has)
        wp_jtext_qnum(t, q, n, v);
    else
        wp_jtext_qnull(t, q, n);
}
void wp_jtext_qobj(wp_jtext *t, const char *q, size_t n) {
    wp_jtext_qkey(t, q, n);
    putc_(t, '{');
}
char *wp_jtext_take(wp_jtext *t, size_t *len) {
    char *p = NULL;
    if (reserve(t, 0)) {
        t->p[t->n] = 0;
        p = t->p;
        if (len) *len = t->n;
    } else {
        free(t->p);
    }
    *t = (wp_jtext){0};
    return p;
}

char *wp_json_print(const cJSON *item, size_t *len) {
    out_buf b = {0};
    if (!item || !reserve(&b, 4095) || !put_value(&b, item) || b.failed) {
        free(b.p);
        return NULL;
    }
    b.p[b.n] = 0;
    if (len) *len = b.n;
    return b.p;
}
