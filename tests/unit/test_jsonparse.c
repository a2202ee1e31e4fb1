/* test_jsonparse.c — server/util/jsonparse.c against cJSON_ParseWithLengthOpts, the parser it stands in
 * for: random objects in the plain grammar (every value kind, numbers of every RFC 8259 form and
 * edge, strings of every byte but '"' and '\\', whitespace of every byte up to 32) must be taken and
 * give cJSON's tree field for field, links included, and the same end; mutations of them (bytes
 * changed, cut short, escapes, cJSON's leniencies such as 01, +1, 1., truex) must either be declined
 * or give cJSON's tree; and a taken tree frees with cJSON_Delete (this program runs under ASan). */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "tests/jsontree.h"
#include "util/jsonparse.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int rndn(int n) { return (int)(rnd() % (uint64_t)n); }

typedef struct {
    char *p;
    size_t n, cap;
} text;
static void put(text *t, const char *s, size_t n) {
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->p = realloc(t->p, t->cap);
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = 0;
}
static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }

static void space(text *t) {
    static const char ws[] = {' ', '\t', '\n', '\r', 1, 11, 12, 31, 32};
    for (int i = rndn(4) == 0 ? rndn(3) : 0; i > 0; i--) put(t, &ws[rndn((int)sizeof ws)], 1);
}

static const char *const numbers[] = {"0",
                                      "-0",
                                      "1",
                                      "-1",
                                      "7",
                                      "123456789012345",
                                      "1234567890123456",
                                      "-999999999999999",
                                      "9007199254740993",
                                      "2147483647",
                                      "2147483648",
                                      "-2147483648",
                                      "-2147483649",
                                      "1e308",
                                      "1e309",
                                      "-1e400",
                                      "1e-400",
                                      "0.1",
                                      "-0.0",
                                      "3.141592653589793238462643383279",
                                      "1E5",
                                      "1e+5",
                                      "1e-5",
                                      "0e0",
                                      "123.456e-7",
                                      "4.9e-324",
                                      "2.2250738585072014e-308",
                                      "1.7976931348623157e308"};

static void number(text *t) {
    if (rndn(2)) {
        puts_(t, numbers[rndn((int)(sizeof numbers / sizeof numbers[0]))]);
        return;
    }
    char b[64];
    int n = 0;
    if (rndn(2)) b[n++] = '-';
    int d = 1 + rndn(20);
    b[n++] = (char)('1' + rndn(9));
    for (int i = 1; i < d; i++) b[n++] = (char)('0' + rndn(10));
    if (rndn(3) == 0) {
        b[n++] = '.';
        for (int i = 0, k = 1 + rndn(8); i < k; i++) b[n++] = (char)('0' + rndn(10));
    }
    if (rndn(4) == 0) n += snprintf(b + n, sizeof b - (size_t)n, "e%s%d", rndn(2) ? "-" : "", rndn(40));
    put(t, b, (size_t)n);
}

static void string(text *t) {
    put(t, "\"", 1);
    for (int i = 0, n = rndn(12); i < n; i++) {
        unsigned char c = (unsigned char)(rndn(4) == 0 ? 1 + rndn(255) : 'a' + rndn(26));
        if (c == '"' || c == '\\') c = 'x';
        put(t, (const char *)&c, 1);
    }
    put(t, "\"", 1);
}

static void value(text *t, int depth);
static void list(text *t, int depth, bool object) {
    put(t, object ? "{" : "[", 1);
    space(t);
    for (int i = 0, n = rndn(depth > 3 ? 2 : 5); i < n; i++) {
        if (i) put(t, ",", 1), space(t);
        if (object) string(t), space(t), put(t, ":", 1), space(t);
        value(t, depth + 1);
        space(t);
    }
    put(t, object ? "}" : "]", 1);
}
static void value(text *t, int depth) {
    static const char *const words[] = {"true", "false", "null"};
    switch (rndn(depth > 4 ? 4 : 6)) {
    case 0:
        number(t);
        break;
    case 1:
        string(t);
        break;
    case 2:
    case 3:
        puts_(t, words[rndn(3)]);
        break;
    default:
        list(t, depth, rndn(2));
    }
}

static int taken, declined;

/* The fast parse of s[0..n), if it takes it, is cJSON's. */
static void compare(const char *s, size_t n, bool must_take) {
    const char *e1 = NULL, *e2 = NULL;
    cJSON *fast = wp_json_parse_fast(s, n, 64, &e1);
    if (must_take) CHECKF(fast != NULL, "declined %.*s", (int)(n < 200 ? n : 200), s);
    if (!fast) {
        declined++;
        return;
    }
    taken++;
    cJSON *ref = cJSON_ParseWithLengthOpts(s, n, &e2, 0);
    CHECKF(ref && cJSON_IsObject(ref) && wp_test_json_same(fast, ref) && e1 == e2, "not cJSON's tree: %.*s",
           (int)(n < 200 ? n : 200), s);
    cJSON_Delete(ref);
    cJSON_Delete(fast);
}

static void mutate(text *t) {
    static const char *const inserts[] = {"\\n", "\\u00e9", "01",  "+1", "1.", ".5", "truex", "nul", "\xef\xbb\xbf",
                                          "-",   "1e",      "0x1", "]",  "}",  ",",  ":",     "\"",  "1-2"};
    if (!t->n) return;
    size_t at = (size_t)rndn((int)t->n);
    switch (rndn(3)) {
    case 0:
        t->p[at] = (char)rndn(256);
        break;
    case 1:
        t->n = at;
        break;
    default: {
        const char *s = inserts[rndn((int)(sizeof inserts / sizeof inserts[0]))];
        text u = {0};
        put(&u, t->p, at);
        puts_(&u, s);
        put(&u, t->p + at, t->n - at);
        free(t->p);
        *t = u;
    }
    }
}

static void fixed_cases(void) {
    T_CASE("fixed");
    const char *const take[] = {"{}",
                                " {}",
                                "{\"a\":1}",
                                "{\"a\":[1,2,{\"b\":null}],\"a\":true}",
                                "{\"\":\"\"}",
                                "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"width\":32,\"args\":{\"lane_mask\":1},"
                                "\"input\":{\"iota\":32}}",
                                "{\"x\":[[],{},[[]]]}",
                                "{\"n\":-0,\"m\":1e-400,\"k\":2147483648}"};
    for (size_t i = 0; i < sizeof take / sizeof take[0]; i++) compare(take[i], strlen(take[i]), true);
    const char *const decline[] = {"",
                                   "[]",
                                   "1",
                                   "{\"a\":\"\\n\"}",
                                   "{\"a\":01}",
                                   "{\"a\":1.}",
                                   "{\"a\":+1}",
                                   "{\"a\":truex}",
                                   "\xef\xbb\xbf{}",
                                   "{\"a\":1",
                                   "{a:1}",
                                   "{\"a\":1,}",
                                   "{\"a\" 1}"};
    for (size_t i = 0; i < sizeof decline / sizeof decline[0]; i++)
        CHECKF(!wp_json_parse_fast(decline[i], strlen(decline[i]), 64, NULL), "took %s", decline[i]);
    /* deeper than the limit: declined (the caller reports too_deep); at the limit: taken */
    CHECK(!wp_json_parse_fast("{\"a\":{\"a\":{}}}", 14, 2, NULL));
    cJSON *ok = wp_json_parse_fast("{\"a\":{\"a\":{}}}", 14, 3, NULL);
    CHECK(ok != NULL);
    cJSON_Delete(ok);
}

int main(void) {
    fixed_cases();
    T_CASE("plain objects");
    for (int i = 0; i < 20000; i++) {
        text t = {0};
        space(&t);
        list(&t, 0, true);
        compare(t.p, t.n, true);
        for (int m = 0; m < 4; m++) {
            mutate(&t);
            compare(t.p, t.n, false);
        }
        free(t.p);
    }
    T_CASE("counts");
    CHECKF(taken > 20000 && declined > 10000, "taken %d, declined %d", taken, declined);
    return t_done("jsonparse");
}
