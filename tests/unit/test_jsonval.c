/* test_jsonval.c — server/api/jsonlist.c and jsonval.c: the in-place reader of large "data" lists
 * (wp_json_scan_array, wp_json_find_top_key) against cJSON + wp_json_to_bits, the path it replaces, on
 * random and edge-case texts for every type, each also with room after it (read in eight-byte steps):
 * whenever the reader accepts a list, every value has the same bits and the list the same length as
 * cJSON gives; it accepts exactly the lists of plain numbers and escape-free strings that cJSON parses
 * and every value of which converts (it declines everything else, so the caller falls back to cJSON
 * and its error messages). Also the number/string halves of wp_json_to_bits. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonval.h"
#include "t.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int rndn(int n) { return (int)(rnd() % (uint64_t)n); }

/* (From "0000000000000000001" on: the edges of the eight-digit steps, 19 digits at most with leading
 * zeros, and of the integer types.) */
static const char *const edge_numbers[] = {"0",
                                           "-0",
                                           "0.0",
                                           "-0.0",
                                           "0e5",
                                           "1e400",
                                           "-1e400",
                                           "1e-400",
                                           "4.9e-324",
                                           "2.4703282292062327e-324",
                                           "2.4703282292062328e-324",
                                           "9007199254740993",
                                           "9007199254740992",
                                           "-9007199254740992",
                                           "9007199254740994",
                                           "18446744073709551615",
                                           "1.7976931348623157e308",
                                           "1.7976931348623159e308",
                                           "2147483647",
                                           "2147483648",
                                           "-2147483648",
                                           "-2147483649",
                                           "4294967295",
                                           "4294967296",
                                           "1.0000000596046447753906250000000001",
                                           "1.000000059604644775390625",
                                           "1.0000000596046448",
                                           "65520",
                                           "65519.99",
                                           "65504",
                                           "1.00390625",
                                           "1.0039062500000001",
                                           "3.4028235677973366e38",
                                           "3.4028234663852886e38",
                                           "1.",
                                           "-.5",
                                           "01",
                                           "-01.50",
                                           "1E2",
                                           "1e+2",
                                           "1E-2",
                                           "00.5e-0",
                                           "123456789012345678",
                                           "1234567890123456789",
                                           "12345678901234567890",
                                           "0.1234567890123456789",
                                           "0.30000000000000004",
                                           "1e22",
                                           "1e23",
                                           "9007199254740991e-22",
                                           "9007199254740993e-22",
                                           "5e-324",
                                           "123.456e-789",
                                           "0.000001",
                                           "1e-7",
                                           "2.5",
                                           "-2.5",
                                           "0.5",
                                           "1.5e0",
                                           "100",
                                           "-100",
                                           "0000000000000000001",
                                           "00000000000000000001",
                                           "0000000000000000000.5",
                                           "0.000000000000000001",
                                           "0.0000000000000000001",
                                           "1234567890.123456789",
                                           "1234567890.1234567891",
                                           "12345678.12345678e-3",
                                           "9999999999999999999",
                                           "99999999999999999999",
                                           "18446744073709551616",
                                           "12345678",
                                           "123456789",
                                           "1234567812345678",
                                           "-0000",
                                           "-0e0",
                                           "1e-0",
                                           "1E+02",
                                           "007",
                                           "-007",
                                           "100e-2",
                                           "1.5e3",
                                           "4294967295.0",
                                           "2147483647.5",
                                           "-2147483648.0",
                                           "-2147483649",
                                           "9007199254740992.0",
                                           "-9007199254740993",
                                           "65504.000000000001",
                                           "0.00006103515625",
                                           "5.9604644775390625e-8"};

static const char *const bad_numbers[] = {"1e",
                                          "1e+",
                                          "--1",
                                          "1-2",
                                          "+1",
                                          ".5",
                                          "1.2.3",
                                          "0x10",
                                          "1e5e5",
                                          "-",
                                          "1..2",
                                          "-e5",
                                          "1e5.",
                                          "2+3",
                                          "Infinity",
                                          "-Infinity",
                                          "NaN",
                                          "nan",
                                          "inf",
                                          "-inf",
                                          "1234567890123456789012345678901234567890123456789012345678901234567890",
                                          "0.000000000000000000000000000000000000000000000000000000000000001",
                                          "1.00000000000000000000000000000000000000000000000000000000000000"};

static const char *const strings[] = {
    "\"NaN\"",
    "\"Infinity\"",
    "\"+Infinity\"",
    "\"-Infinity\"",
    "\"1.5\"",
    "\"0x10\"",
    "\"0x1p3\"",
    "\"\"",
    "\" 1\"",
    "\"1 \"",
    "\"9007199254740993\"",
    "\"-9223372036854775808\"",
    "\"9223372036854775808\"",
    "\"18446744073709551615\"",
    "\"18446744073709551616\"",
    "\"-1\"",
    "\"-0\"",
    "\"abc\"",
    "\"\\u0031\"",
    "\"1\\n\"",
    "\"077\"",
    "\"1e400\"",
    "\"nan\"",
    "\"inf\"",
    "\"4294967296\"",
    "\"2147483648\"",
    "\"1.0000000596046447753906250000000001\"",
    "\"65520\"",
    "\"1,2\"",
    "\"]\"",
    "\"0\"",
    "\"00\"",
    "\"007\"",
    "\"-\"",
    "\"1-\"",
    "\"12345678\"",
    "\"123456789\"",
    "\"123456789012345678\"",
    "\"-123456789012345678\"",
    "\"1234567890123456789\"",
    "\"9223372036854775807\"",
    "\"-9223372036854775809\"",
    "\"4294967295\"",
    "\"-2147483648\"",
    "\"-2147483649\"",
    "\"2147483647\"",
    "\"[\"",
    "\"123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
    "12345678901234567890123456789012345678901234567890\""};

static const char *const others[] = {"{\"bits\":\"0x3f800000\"}",
                                     "{\"bits\":\"0x1\"}",
                                     "true",
                                     "false",
                                     "null",
                                     "[1]",
                                     "[]",
                                     "{}",
                                     "x",
                                     "\"unterminated"};

static const char *const spaces[] = {"", "", "", " ", "\t", "\n", "\r\n", "  ", "\x01", "\x1f"};

static void gen_number(char *out, size_t cap) {
    switch (rndn(14)) {
    case 0: {
        uint64_t b = rnd();
        double d;
        memcpy(&d, &b, sizeof d);
        if (!isfinite(d)) d = 1.25;
        snprintf(out, cap, "%.17g", d);
        break;
    }
    case 1: {
        uint32_t b = (uint32_t)rnd();
        float f;
        memcpy(&f, &b, sizeof f);
        if (!isfinite(f)) f = 3.5f;
        snprintf(out, cap, "%.9g", (double)f);
        break;
    }
    case 2:
        snprintf(out, cap, "%.6f", (double)(rnd() >> 11) / 9007199254740992.0);
        break;
    case 3: {
        uint64_t v = rnd() >> rndn(64);
        snprintf(out, cap, "%s%llu", rndn(2) ? "-" : "", (unsigned long long)v);
        break;
    }
    case 4: { /* random digits, a point somewhere, an exponent */
        int nd = 1 + rndn(25), point = rndn(nd + 1);
        size_t k = 0;
        if (rndn(3) == 0) out[k++] = '-';
        for (int i = 0; i < nd; i++) {
            if (i == point && i > 0) out[k++] = '.';
            out[k++] = (char)('0' + rndn(10));
        }
        out[k] = 0;
        if (rndn(2)) snprintf(out + k, cap - k, "e%s%d", rndn(2) ? "-" : (rndn(2) ? "+" : ""), rndn(60));
        break;
    }
    case 5:
    case 6:
        snprintf(out, cap, "%s", edge_numbers[rndn((int)WP_ARRAY_LEN(edge_numbers))]);
        break;
    case 7:
        snprintf(out, cap, "%s", bad_numbers[rndn((int)WP_ARRAY_LEN(bad_numbers))]);
        break;
    case 8: { /* next to an f32 rounding midpoint: (float)strtod and strtof may differ */
        float f = (float)((double)(rnd() >> 11) / 9007199254740992.0 * pow(2, rndn(40) - 20));
        double mid = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
        snprintf(out, cap, "%.*g", 17 + rndn(12), mid * (1 + (rndn(3) - 1) * 1e-17));
        break;
    }
    case 9: { /* next to an f16/bf16 midpoint */
        double base = ldexp(1.0 + (double)rndn(1024) / 1024.0, rndn(30) - 15);
        snprintf(out, cap, "%.*g", 6 + rndn(12), base + ldexp(1, rndn(30) - 25) * (rndn(2) ? 1 : -1));
        break;
    }
    case 10: { /* integers next to the 32-bit and 2^53 edges */
        static const double edges[] = {2147483647.0, 4294967295.0, 9007199254740992.0, -2147483648.0};
        snprintf(out, cap, "%.0f", edges[rndn(4)] + rndn(5) - 2);
        break;
    }
    default:
        snprintf(out, cap, "%.*g", 1 + rndn(17), ldexp((double)(rnd() >> 11), rndn(140) - 110));
        break;
    }
}

static void gen_element(char *out, size_t cap) {
    int r = rndn(20);
    if (r < 14)
        gen_number(out, cap);
    else if (r < 18)
        snprintf(out, cap, "%s", strings[rndn((int)WP_ARRAY_LEN(strings))]);
    else if (r < 19) { /* a number as a string */
        char num[96];
        gen_number(num, sizeof num);
        snprintf(out, cap, "\"%s\"", num);
    } else
        snprintf(out, cap, "%s", others[rndn((int)WP_ARRAY_LEN(others))]);
}

/* A list text: mostly valid, sometimes broken the ways a client breaks them. */
static size_t gen_list(char *out, size_t cap) {
    size_t k = 0;
#define PUT(s) k += (size_t)snprintf(out + k, cap - k, "%s", (s))
    PUT("[");
    PUT(spaces[rndn((int)WP_ARRAY_LEN(spaces))]);
    int n = rndn(7);
    for (int i = 0; i < n; i++) {
        char el[256];
        gen_element(el, sizeof el);
        PUT(el);
        PUT(spaces[rndn((int)WP_ARRAY_LEN(spaces))]);
        if (i + 1 < n) {
            int b = rndn(60);
            PUT(b == 0 ? "" : b == 1 ? ",," : ",");
            PUT(spaces[rndn((int)WP_ARRAY_LEN(spaces))]);
        } else if (rndn(40) == 0)
            PUT(",");
    }
    int e = rndn(40);
    if (e != 0) PUT("]");
    if (e == 1) PUT("]");
    if (e == 2) PUT(",1]");
#undef PUT
    return k;
}

static bool has_backslash(const char *s, size_t n) { return memchr(s, '\\', n) != NULL; }

/* A number of more than 63 characters outside strings: older cJSON reads only 63 of them, newer ones
 * all; the reader leaves it to whichever is linked. */
static bool has_long_number(const char *s, size_t n) {
    bool in_str = false;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') in_str = !in_str;
        run = !in_str && strchr("0123456789+-.eE", s[i]) && s[i] ? run + 1 : 0;
        if (run > 63) return true;
    }
    return false;
}

static uint64_t load_bits(const void *base, size_t size, uint64_t i) {
    if (size == 2) return ((const uint16_t *)base)[i];
    if (size == 4) return ((const uint32_t *)base)[i];
    return ((const uint64_t *)base)[i];
}

static long checked, accepted;

/* One list text, one type: the reader against cJSON + wp_json_to_bits. */
static void compare(const char *text, size_t n, wp_type t) {
    const char *end = NULL;
    cJSON *arr = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    bool valid = arr && cJSON_IsArray(arr), convert = valid,
         plain = valid && !has_backslash(text, n) && !has_long_number(text, n);
    uint64_t ref[16];
    int nref = 0;
    for (const cJSON *v = valid ? arr->child : NULL; v; v = v->next, nref++) {
        if (!cJSON_IsNumber(v) && !cJSON_IsString(v)) plain = false;
        if (cJSON_IsString(v) && strlen(v->valuestring) > 128) plain = false;
        wp_err e = {0};
        if (nref >= 16 || wp_json_to_bits(v, t, "data", &ref[nref < 16 ? nref : 15], &e)) convert = false;
    }
    uint64_t out[16 * 2 + 8];
    uint64_t count = 0;
    size_t used = 0;
    bool ok = wp_json_scan_array(text, n, t, out, wp_json_array_cap(n), &count, &used);
    void *fresh = NULL; /* the reader into a buffer of its own: the same verdict, values and length */
    uint64_t fresh_count = 0;
    size_t fresh_used = 0;
    const bool fresh_ok = wp_json_scan_array_new(text, n, t, &fresh, &fresh_count, &fresh_used);
    CHECKF(fresh_ok == ok && (!ok || (fresh_count == count && fresh_used == used &&
                                      !memcmp(fresh, out, (size_t)count * wp_type_size(t)))),
           "%s: %.*s: the reader into a new buffer differs", wp_type_name(t), (int)n, text);
    free(fresh);
    bool want = valid && convert && plain;
    checked++;
    accepted += ok;
    CHECKF(ok == want, "%s: %.*s: reader %s, cJSON path %s", wp_type_name(t), (int)n, text, ok ? "accepts" : "declines",
           want    ? "reads it"
           : valid ? (convert ? "has non-plain values" : "refuses a value")
                   : "finds no valid list");
    if (ok && want) {
        CHECKF(count == (uint64_t)nref, "%s: %.*s: %llu values, cJSON %d", wp_type_name(t), (int)n, text,
               (unsigned long long)count, nref);
        CHECKF(used == (size_t)(end - text), "%s: %.*s: used %zu, cJSON %zu", wp_type_name(t), (int)n, text, used,
               (size_t)(end - text));
        for (int i = 0; i < nref && (uint64_t)i < count; i++)
            CHECKF(load_bits(out, wp_type_size(t), (uint64_t)i) == ref[i], "%s: %.*s: value %d bits %llx, cJSON %llx",
                   wp_type_name(t), (int)n, text, i, (unsigned long long)load_bits(out, wp_type_size(t), (uint64_t)i),
                   (unsigned long long)ref[i]);
    }
    cJSON_Delete(arr);
}

static const wp_type all_types[] = {WP_I32, WP_U32, WP_I64, WP_U64, WP_F32, WP_F64, WP_F16, WP_BF16};

static void test_random_lists(void) {
    T_CASE("random lists, every type, against cJSON");
    int fails_before = t_fail;
    for (int round = 0; round < 30000 && t_fail - fails_before < 20; round++) {
        char text[2048];
        size_t n = gen_list(text, sizeof text);
        for (size_t k = 0; k < WP_ARRAY_LEN(all_types); k++) compare(text, n, all_types[k]);
        if (n && text[n - 1] == ']' && n + 16 < sizeof text) { /* room after the last value too */
            memmove(text + n + 15, text + n - 1, 2);
            memset(text + n - 1, ' ', 16);
            for (size_t k = 0; k < WP_ARRAY_LEN(all_types); k++) compare(text, n + 16, all_types[k]);
        }
    }
    printf("random lists: %ld compared, %ld read in place\n", checked, accepted);
}

static void test_every_edge(void) {
    T_CASE("every edge token alone, every type");
    const char *const *lists[] = {edge_numbers, bad_numbers, strings, others};
    size_t lens[] = {WP_ARRAY_LEN(edge_numbers), WP_ARRAY_LEN(bad_numbers), WP_ARRAY_LEN(strings),
                     WP_ARRAY_LEN(others)};
    for (size_t l = 0; l < 4; l++)
        for (size_t i = 0; i < lens[l]; i++) {
            char text[512];
            int n = snprintf(text, sizeof text, "[%s]", lists[l][i]);
            for (size_t k = 0; k < WP_ARRAY_LEN(all_types); k++) compare(text, (size_t)n, all_types[k]);
            n = snprintf(text, sizeof text, "[ 1 ,%s\n]", lists[l][i]);
            for (size_t k = 0; k < WP_ARRAY_LEN(all_types); k++) compare(text, (size_t)n, all_types[k]);
            /* room after it: read in eight-byte steps */
            n = snprintf(text, sizeof text, "[%s,%s                ]", lists[l][i], lists[l][i]);
            for (size_t k = 0; k < WP_ARRAY_LEN(all_types); k++) compare(text, (size_t)n, all_types[k]);
        }
}

/* The f32 rounding the two paths share: a number goes through a double ((float)strtod), a string
 * straight to float (strtof); 1 + 2^-24 + a little rounds to 1 one way and up the other. */
static void test_f32_double_rounding(void) {
    T_CASE("f32: numbers round twice, strings once");
    const char *text = "[1.0000000596046447753906250000000001, \"1.0000000596046447753906250000000001\"]";
    float out[4];
    uint64_t count;
    size_t used;
    CHECK(wp_json_scan_array(text, strlen(text), WP_F32, out, 4, &count, &used) && count == 2);
    CHECK(out[0] == 1.0f && out[1] == nextafterf(1.0f, 2.0f));
    uint16_t h[2];
    const char *f16 = "[65520, 65519]";
    CHECK(wp_json_scan_array(f16, strlen(f16), WP_F16, h, 2, &count, &used) && h[0] == 0x7c00 && h[1] == 0x7bff);
}

/* A long list (the case the reader is for), with a tight cap. */
static void test_long_list(void) {
    T_CASE("10^5 values");
    enum { N = 100000 };
    char *text = malloc((size_t)N * 80);
    size_t k = 0;
    text[k++] = '[';
    for (int i = 0; i < N; i++) {
        char num[64];
        gen_number(num, sizeof num);
        char one[80];
        snprintf(one, sizeof one, "[%s]", num);
        cJSON *probe = cJSON_Parse(one);
        if (!probe || strlen(num) > 63) snprintf(num, sizeof num, "%d", i); /* valid numbers only */
        cJSON_Delete(probe);
        k += (size_t)snprintf(text + k, 80, "%s%s", num, i + 1 < N ? "," : "]");
    }
    cJSON *arr = cJSON_ParseWithLength(text, k);
    double *out = malloc(sizeof(double) * wp_json_array_cap(k));
    uint64_t count = 0;
    size_t used = 0;
    bool ok = wp_json_scan_array(text, k, WP_F64, out, wp_json_array_cap(k), &count, &used);
    CHECKF(arr != NULL && ok == (arr != NULL && cJSON_GetArraySize(arr) == N && !has_long_number(text, k)),
           "cJSON %s, reader %s", arr ? "parses" : "fails", ok ? "accepts" : "declines");
    if (ok && arr) {
        int i = 0, bad = 0;
        for (const cJSON *v = arr->child; v; v = v->next, i++)
            if (memcmp(&out[i], &v->valuedouble, sizeof(double))) bad++;
        CHECKF(bad == 0 && count == N && used == k, "%d of %d differ", bad, N);
    }
    CHECK(!wp_json_scan_array(text, k, WP_F64, out, N - 1, &count, &used)); /* more values than room */
    cJSON_Delete(arr);
    free(out);
    free(text);
}

static void find(const char *text, bool want, const char *at, const char *hint_want) {
    size_t value_at = 0;
    char hint[16] = "?";
    bool got = wp_json_find_top_key(text, strlen(text), "data", "type", &value_at, hint, sizeof hint);
    CHECKF(got == want, "%s: %s", text, got ? "found" : "not found");
    if (got && want) {
        CHECKF(!strncmp(text + value_at, at, strlen(at)), "%s: value at \"%.10s\"", text, text + value_at);
        CHECKF(!strcmp(hint, hint_want), "%s: hint \"%s\", want \"%s\"", text, hint, hint_want);
    }
}

static void test_find_top_key(void) {
    T_CASE("the top-level data key");
    find("{\"type\":\"i64\",\"data\":[1,2]}", true, "[1,2]", "i64");
    find("  {\"op\":\"sum\" , \"data\" :\n [ 1 ] }", true, "[ 1 ]", "");
    find("{\"data\":[1],\"type\":\"i64\"}", true, "[1]", "");                     /* type after data */
    find("{\"type\":7,\"data\":[1]}", true, "[1]", "");                           /* not a string */
    find("{\"type\":\"a-very-long-type-name\",\"data\":[1]}", true, "[1]", "");   /* too long to be one */
    find("{\"type\":\"f\\u0033\\u0032\",\"data\":[1]}", true, "[1]", "");         /* escaped value */
    find("{\"type\":\"f64\",\"type\":\"i32\",\"data\":[1]}", true, "[1]", "f64"); /* cJSON takes the first */
    find("{\"x\":{\"data\":[9]},\"data\":[1]}", true, "[1]", "");                 /* nested: not it */
    find("{\"x\":[\"data\",{\"data\":2}],\"data\":[1]}", true, "[1]", "");        /* a value, and nested */
    find("{\"op\":\"data\",\"data\":[1]}", true, "[1]", "");                      /* "data" as a value */
    find("{\"s\":\"}]\\\"{\",\"data\":[1]}", true, "[1]", "");                    /* brackets in a string */
    find("{\"d\\u0061ta\":[7],\"data\":[1]}", false, "", "");                     /* cJSON reads it as data */
    find("{\"x\":1}", false, "", "");
    find("[{\"data\":[1]}]", false, "", "");
    find("\xef\xbb\xbf{\"data\":[1]}", false, "", ""); /* a BOM: cJSON skips it, this walk does not */
    find("{\"data\"", false, "", "");
    find("{\"data\":", true, "", "");
    find("{\"a\":{}}, {\"data\":[1]}", false, "", "");
    /* a NUL byte in a name: cJSON's name ends there ("data"), so this walk declines (found by fuzz_data) */
    static const char nul_key[] = "{\"data\0\0\0\x80type\":\"u64\",\"op\":\"or\",\"data\":[]}";
    size_t at = 0;
    char hint[16];
    CHECK(!wp_json_find_top_key(nul_key, sizeof nul_key - 1, "data", "type", &at, hint, sizeof hint));
}

static void test_halves(void) {
    T_CASE("number and string halves");
    uint64_t b;
    wp_err e = {0};
    CHECK(wp_json_number_to_bits(-0.0, WP_U32, "x", &b, &e) < 0 && !strcmp(e.code, "out_of_range") &&
          strstr(e.msg, "-0 is negative"));
    CHECK(wp_json_number_to_bits(-0.0, WP_I32, "x", &b, &e) == 0 && b == 0);
    CHECK(wp_json_number_to_bits(-5, WP_I64, "x", &b, &e) == 0 && b == (uint64_t)-5);
    CHECK(wp_json_number_to_bits(-5, WP_I32, "x", &b, &e) == 0 && b == 0xfffffffbu);
    CHECK(wp_json_number_to_bits(4294967296.0, WP_U32, "x", &b, &e) < 0 &&
          strstr(e.msg, "4294967296 does not fit u32"));
    CHECK(wp_json_number_to_bits(2147483648.0, WP_I32, "x", &b, &e) < 0 &&
          strstr(e.msg, "2147483648 does not fit i32"));
    CHECK(wp_json_number_to_bits(9007199254740994.0, WP_U64, "x", &b, &e) < 0 && !strcmp(e.code, "precision_loss"));
    CHECK(wp_json_number_to_bits(9007199254740992.0, WP_U64, "x", &b, &e) == 0 && b == 9007199254740992ull);
    CHECK(wp_json_number_to_bits(2.5, WP_I32, "data[3]", &b, &e) < 0 && !strcmp(e.field, "data[3]"));
    CHECK(wp_json_string_to_bits("-Infinity", WP_F16, "x", &b, &e) == 0 && b == 0xfc00);
    CHECK(wp_json_string_to_bits("0x10", WP_U64, "x", &b, &e) == 0 && b == 16);
    CHECK(wp_json_string_to_bits("1x", WP_F64, "data[0]", &b, &e) < 0 && !strcmp(e.code, "bad_value"));
}

int main(void) {
    test_halves();
    test_find_top_key();
    test_f32_double_rounding();
    test_every_edge();
    test_random_lists();
    test_long_list();
    return t_done("jsonval");
}
