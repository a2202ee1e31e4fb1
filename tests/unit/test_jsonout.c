/* test_jsonout.c — server/util/jsonout.c against cJSON_PrintUnformatted, the printer it replaces: random
 * trees (every item type; numbers that are integers, whole thousandths, random bit patterns, edge
 * values; strings and keys of every byte but NUL; raw items) must print to the same bytes and length,
 * and refuse (NULL) exactly where cJSON refuses. Also the integer formatters against printf. */
#include <cjson/cJSON.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "util/jsonout.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int rndn(int n) { return (int)(rnd() % (uint64_t)n); }

static const double edge[] = {0.0,
                              -0.0,
                              1.0,
                              -1.0,
                              0.5,
                              0.1,
                              0.001,
                              0.0005,
                              1e-4,
                              1e-5,
                              123.456,
                              -45.327,
                              999.999,
                              1e11,
                              999999999999.999,
                              1e12,
                              1e12 + 0.5,
                              1e15,
                              1e16,
                              1e17,
                              1e21,
                              1e22,
                              1e300,
                              -1e300,
                              DBL_MIN,
                              DBL_MAX,
                              -DBL_MAX,
                              4.9e-324,
                              2147483647.0,
                              2147483648.0,
                              -2147483648.0,
                              -2147483649.0,
                              2147483647.5,
                              9007199254740993.0,
                              0.3,
                              2.675,
                              1.0 / 3.0,
                              100.0 / 7.0};

static double random_number(void) {
    switch (rndn(8)) {
    case 0:
        return edge[rndn((int)(sizeof edge / sizeof *edge))];
    case 1:
        return (double)(int32_t)rnd();
    case 2:
        return (double)((int64_t)rnd() % 1000000000000000ll) / 1000.0; /* whole thousandths */
    case 3:
        return (double)(rndn(2000000) - 1000000) / 1000.0;
    case 4: {
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, sizeof d);
        return d; /* NaN and infinities included */
    }
    case 5:
        return (double)rndn(100000) / (double)(1 + rndn(1000));
    case 6:
        return ldexp((double)(rnd() >> 11), rndn(200) - 100);
    default:
        return (double)(int64_t)rnd();
    }
}

static char *random_text(void) {
    int n = rndn(12);
    char *s = malloc((size_t)n + 1);
    for (int i = 0; i < n; i++) {
        int c = rndn(4) ? ' ' + rndn(95) : 1 + rndn(255);
        s[i] = (char)c;
    }
    s[n] = 0;
    return s;
}

/* Keys random_item draws now and then that the q* writers can write (they take a literal). */
static const struct {
    const char *name, *q;
    size_t n;
} qkeys[] = {{"key", WP_JKEY("key")}, {"value", WP_JKEY("value")}, {"timing_us", WP_JKEY("timing_us")}};
#define N_QKEYS (int)(sizeof qkeys / sizeof qkeys[0])

static int qkey_of(const char *key) {
    for (int i = 0; key && i < N_QKEYS; i++)
        if (!strcmp(key, qkeys[i].name)) return i;
    return -1;
}

static cJSON *random_item(int depth) {
    int kind = rndn(depth > 3 ? 7 : 9);
    switch (kind) {
    case 0:
        return cJSON_CreateNull();
    case 1:
        return cJSON_CreateBool(rndn(2));
    case 2:
    case 3:
        return cJSON_CreateNumber(random_number());
    case 4: {
        char *s = random_text();
        cJSON *it = cJSON_CreateString(s);
        free(s);
        return it;
    }
    case 5:
        return cJSON_CreateRaw(rndn(2) ? "\"raw\"" : "[1,2.5]");
    case 6:
        return cJSON_CreateNumber((double)rndn(1000));
    default: {
        bool obj = kind == 7;
        cJSON *c = obj ? cJSON_CreateObject() : cJSON_CreateArray();
        int n = rndn(6);
        for (int i = 0; i < n; i++) {
            cJSON *child = random_item(depth + 1);
            if (obj && rndn(3) == 0) { /* a key the q* writers can write too */
                cJSON_AddItemToObject(c, qkeys[rndn(N_QKEYS)].name, child);
            } else if (obj) {
                char *k = random_text();
                cJSON_AddItemToObject(c, k, child);
                free(k);
            } else
                cJSON_AddItemToArray(c, child);
        }
        return c;
    }
    }
}

static void same_as_cjson(const cJSON *tree, const char *what) {
    char *want = cJSON_PrintUnformatted(tree);
    size_t n = 12345;
    char *got = wp_json_print(tree, &n);
    if (!want) {
        CHECKF(!got, "%s: cJSON refused, jsonout printed %s", what, got);
    } else {
        CHECKF(got && !strcmp(got, want) && n == strlen(want), "%s:\n  cJSON   %s\n  jsonout %s", what, want,
               got ? got : "(null)");
    }
    free(want);
    free(got);
}

/* it (under key, when given) through the text writers, choosing among the ways each can be written */
static void write_item(wp_jtext *t, const cJSON *it, const char *key) {
    const int k = qkey_of(key);
    const bool q_form = k >= 0 && rndn(2); /* a q* writer, else wp_jtext_key + the value's */
    const char *q = q_form ? qkeys[k].q : NULL;
    const size_t qn = q_form ? qkeys[k].n : 0;
    if (key && !q_form) wp_jtext_key(t, key);
    switch (it->type & 0xFF) {
    case cJSON_NULL:
        if (q_form && rndn(2))
            wp_jtext_qnull(t, q, qn);
        else if (q_form)
            wp_jtext_qnum_or_null(t, q, qn, false, 1.0);
        else
            wp_jtext_text(t, "null", 4);
        return;
    case cJSON_False:
    case cJSON_True:
        if (q_form)
            wp_jtext_qbool(t, q, qn, cJSON_IsTrue(it));
        else if (cJSON_IsTrue(it))
            wp_jtext_text(t, "true", 4);
        else
            wp_jtext_text(t, "false", 5);
        return;
    case cJSON_Number:
        if (q_form && rndn(2))
            wp_jtext_qnum(t, q, qn, it->valuedouble);
        else if (q_form)
            wp_jtext_qnum_or_null(t, q, qn, true, it->valuedouble);
        else
            wp_jtext_num(t, it->valuedouble);
        return;
    case cJSON_String:
        if (q_form)
            wp_jtext_qstr(t, q, qn, it->valuestring);
        else
            wp_jtext_sval(t, it->valuestring);
        return;
    case cJSON_Raw:
        if (q_form) wp_jtext_qkey(t, q, qn);
        wp_jtext_text(t, it->valuestring, strlen(it->valuestring));
        return;
    default: {
        const bool obj = cJSON_IsObject(it);
        if (obj && q_form)
            wp_jtext_qobj(t, q, qn);
        else if (q_form) {
            wp_jtext_qkey(t, q, qn);
            wp_jtext_open(t, '[');
        } else
            wp_jtext_open(t, obj ? '{' : '[');
        if (obj && rndn(4) == 0)
            wp_jtext_members(t, it); /* the pairs as a tree */
        else
            for (const cJSON *c = it->child; c; c = c->next) {
                if (rndn(8)) {
                    write_item(t, c, obj ? c->string : NULL);
                    continue;
                }
                if (obj) wp_jtext_key(t, c->string);
                wp_jtext_json(t, c); /* a subtree as a tree */
            }
        wp_jtext_close(t, obj ? '}' : ']');
    }
    }
}

static void writers_as_cjson(const cJSON *tree, const char *what) {
    char *want = cJSON_PrintUnformatted(tree);
    wp_jtext t = {0};
    write_item(&t, tree, NULL);
    size_t n = 12345;
    char *got = wp_jtext_take(&t, &n);
    CHECKF(got && want && !strcmp(got, want) && n == strlen(want), "%s:\n  cJSON   %s\n  jtext   %s", what,
           want ? want : "(null)", got ? got : "(null)");
    CHECK(t.p == NULL && t.n == 0);
    free(want);
    free(got);
}

int main(void) {
    T_CASE("edge numbers");
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateNumber(edge[i]));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(-edge[i]));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(nextafter(edge[i], INFINITY)));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(nextafter(edge[i], -INFINITY)));
        same_as_cjson(a, "edge");
        cJSON_Delete(a);
    }
    T_CASE("every control byte and quote in a string and a key");
    {
        char s[40];
        for (int i = 0; i < 32; i++) s[i] = (char)(i + 1);
        memcpy(s + 31, "\"\\/\x7f\xc3\xa9", 7);
        s[38] = 0;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, s, s);
        cJSON_AddItemToObject(o, "", cJSON_CreateString(""));
        same_as_cjson(o, "escapes");
        cJSON_Delete(o);
    }
    T_CASE("what cJSON refuses");
    {
        cJSON *o = cJSON_CreateObject();
        cJSON *raw = cJSON_CreateRaw("1");
        free(raw->valuestring);
        raw->valuestring = NULL;
        cJSON_AddItemToObject(o, "r", raw);
        same_as_cjson(o, "raw without text");
        cJSON_Delete(o);
        cJSON *inv = cJSON_CreateArray();
        cJSON *bad = cJSON_CreateNull();
        bad->type = cJSON_Invalid;
        cJSON_AddItemToArray(inv, bad);
        same_as_cjson(inv, "invalid item");
        cJSON_Delete(inv);
        CHECK(wp_json_print(NULL, NULL) == NULL);
    }
    T_CASE("random trees");
    for (int i = 0; i < 20000; i++) {
        cJSON *tree = random_item(0);
        same_as_cjson(tree, "random");
        cJSON_Delete(tree);
    }
    T_CASE("random numbers");
    for (int i = 0; i < 200000; i++) {
        cJSON *num = cJSON_CreateNumber(random_number());
        same_as_cjson(num, "number");
        cJSON_Delete(num);
    }
    T_CASE("text writers: edge numbers, every magnitude");
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "v", edge[i]);
        cJSON_AddNumberToObject(o, "neg", -edge[i]);
        cJSON_AddNumberToObject(o, "up", nextafter(edge[i], INFINITY));
        cJSON_AddNumberToObject(o, "down", nextafter(edge[i], -INFINITY));
        writers_as_cjson(o, "edge numbers");
        cJSON_Delete(o);
    }
    for (int e = -330; e <= 310; e++) {
        cJSON *a = cJSON_CreateArray();
        for (int k = 0; k < 8; k++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((1 + (double)rndn(1000000) / 7) * pow(10, e)));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(-INFINITY));
        writers_as_cjson(a, "magnitudes");
        cJSON_Delete(a);
    }
    T_CASE("text writers: escapes, empty and nested objects");
    {
        char s[40];
        for (int i = 0; i < 32; i++) s[i] = (char)(i + 1);
        memcpy(s + 31, "\"\\/\x7f\xc3\xa9", 7);
        s[38] = 0;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, s, s);
        cJSON_AddObjectToObject(o, "empty");
        cJSON_AddArrayToObject(o, "none");
        cJSON *in = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "a"), "b");
        cJSON_AddObjectToObject(in, "");
        cJSON_AddNumberToObject(in, "x", 1.5);
        cJSON_AddStringToObject(o, "", "");
        writers_as_cjson(o, "escapes and nesting");
        cJSON_Delete(o);
        cJSON *e = cJSON_CreateObject();
        writers_as_cjson(e, "empty object");
        cJSON_Delete(e);
        wp_jtext t = {0}; /* a NULL string: no pair, as cJSON_AddStringToObject(o, "k", NULL) adds none */
        wp_jtext_open(&t, '{');
        wp_jtext_qstr(&t, WP_JKEY("k"), NULL);
        wp_jtext_qstr(&t, WP_JKEY("j"), "v");
        wp_jtext_qnum_or_null(&t, WP_JKEY("a"), false, 1);
        wp_jtext_qnum_or_null(&t, WP_JKEY("b"), true, 2.5);
        wp_jtext_close(&t, '}');
        char *got = wp_jtext_take(&t, NULL);
        CHECKF(got && !strcmp(got, "{\"j\":\"v\",\"a\":null,\"b\":2.5}"), "NULL string, or_null: %s",
               got ? got : "(null)");
        free(got);
        t = (wp_jtext){0}; /* a tree cJSON refuses: no text */
        cJSON *bad = cJSON_CreateNull();
        bad->type = cJSON_Invalid;
        wp_jtext_open(&t, '[');
        CHECK(!wp_jtext_json(&t, bad));
        wp_jtext_close(&t, ']');
        CHECK(wp_jtext_take(&t, NULL) == NULL);
        cJSON_Delete(bad);
    }
    T_CASE("text writers: random trees");
    for (int i = 0; i < 20000; i++) {
        cJSON *tree = random_item(0);
        writers_as_cjson(tree, "random");
        cJSON_Delete(tree);
    }
    T_CASE("integers");
    {
        const int64_t is[] = {0, 1, -1, 9, 10, -10, INT64_MAX, INT64_MIN, 1000000007, -2147483648ll};
        char a[32], b[32];
        for (size_t i = 0; i < sizeof is / sizeof *is; i++) {
            int n = wp_json_fmt_i64(a, is[i]);
            snprintf(b, sizeof b, "%" PRId64, is[i]);
            CHECKF(!strcmp(a, b) && n == (int)strlen(b), "%s vs %s", a, b);
        }
        for (int i = 0; i < 100000; i++) {
            uint64_t u = rnd() >> rndn(64);
            int n = wp_json_fmt_u64(a, u);
            snprintf(b, sizeof b, "%" PRIu64, u);
            CHECKF(!strcmp(a, b) && n == (int)strlen(b), "%s vs %s", a, b);
            int64_t s = (int64_t)(rnd() >> rndn(64)) * (rndn(2) ? 1 : -1);
            n = wp_json_fmt_i64(a, s);
            snprintf(b, sizeof b, "%" PRId64, s);
            CHECKF(!strcmp(a, b) && n == (int)strlen(b), "%s vs %s", a, b);
        }
        CHECK(wp_json_fmt_u64(a, UINT64_MAX) == 20 && !strcmp(a, "18446744073709551615"));
    }
    return t_done("jsonout");
}
