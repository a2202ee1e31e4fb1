/* api_reduce_paths.c — against a live daemon (emu), the three fast paths of /v1/reduce, /v1/scan and
 * PUT /v1/buffers, each against the path it shortcuts:
 *   - small jobs answered on the HTTP thread, everything else deferred to a worker (counted by
 *     /metrics: warpd_http_answered_inline_total, warpd_http_deferred_total);
 *   - "data" read in place without cJSON: every response (values, errors, messages) is the one the
 *     cJSON path gives for the same request — forced by an escaped key ("\u0063heck":false), which the
 *     in-place reader leaves to cJSON — over edge cases and random lists of every type and form;
 *   - raw bodies streamed into the device buffer as they arrive: the same values as base64 and as a
 *     chunked (gathered) body, errors answered before the body (bad length, bad query), PUT /v1/buffers
 *     streamed, and a client that goes away mid-body leaves nothing behind.
 * Usage: api_reduce_paths BASE_URL */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/http_client.h"
#include "tests/unit/t.h"

static char host[256];
static int port;

static const char *const json_hdr[] = {"Content-Type: application/json", NULL};
static const char *const raw_hdr[] = {"Content-Type: application/octet-stream", NULL};

static int call(const char *method, const char *path, const char *const *headers, const void *body, size_t n,
                unsigned flags, hc_resp *r) {
    char err[160] = "";
    int rc = hc_request(host, port, method, path, headers, body, n, flags, r, err, sizeof err);
    if (rc) fprintf(stderr, "  %s %s: %s\n", method, path, err);
    return rc;
}

static cJSON *post_json(const char *path, const char *body, int *status) {
    hc_resp r;
    cJSON *o = NULL;
    *status = -1;
    if (call("POST", path, json_hdr, body, strlen(body), 0, &r) == 0) {
        *status = r.status;
        o = cJSON_ParseWithLength(r.body, r.body_len);
    }
    hc_resp_free(&r);
    return o;
}

static double metric(const char *name) {
    hc_resp r;
    double v = -1;
    if (call("GET", "/metrics", NULL, NULL, 0, 0, &r) == 0) {
        char key[128];
        snprintf(key, sizeof key, "\n%s ", name);
        const char *p = strstr(r.body, key);
        if (p) v = atof(p + strlen(key));
    }
    hc_resp_free(&r);
    return v;
}

static const char *str_at(const cJSON *o, const char *a, const char *b) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- 1. inline or deferred ---- */

typedef struct {
    double inl, def;
} counts;
static counts now_counts(void) {
    return (counts){metric("warpd_http_answered_inline_total"), metric("warpd_http_deferred_total")};
}

static void expect_route(const char *what, const char *body, bool inline_want) {
    counts c0 = now_counts();
    int status;
    cJSON *o = post_json("/v1/reduce", body, &status);
    counts c1 = now_counts();
    CHECKF(status == 200, "%s: status %d", what, status);
    if (inline_want)
        CHECKF(c1.inl == c0.inl + 1 && c1.def == c0.def, "%s: want inline; inline %+.0f deferred %+.0f", what,
               c1.inl - c0.inl, c1.def - c0.def);
    else
        CHECKF(c1.def == c0.def + 1 && c1.inl == c0.inl, "%s: want deferred; inline %+.0f deferred %+.0f", what,
               c1.inl - c0.inl, c1.def - c0.def);
    cJSON_Delete(o);
}

static void test_inline(void) {
    T_CASE("small jobs inline, the rest deferred");
    expect_route("3 values", "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1.5,2,3]}", true);
    expect_route("10 values", "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1,2,3,4,5,6,7,8,9,10]}", true);
    size_t n = 30000, k = 0;
    char *big = malloc(n * 4 + 64);
    k += (size_t)sprintf(big, "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[");
    for (size_t i = 0; i < n; i++) k += (size_t)sprintf(big + k, "%d%s", (int)(i % 10), i + 1 < n ? "," : "]}");
    expect_route("a 60 KB body", big, k <= 65536);
    expect_route("generate 1000 on emu",
                 "{\"type\":\"f32\",\"op\":\"max\",\"generate\":{\"kind\":\"iota\",\"n\":1000}}", true);
    expect_route("generate 10^6", "{\"type\":\"f32\",\"op\":\"max\",\"generate\":{\"kind\":\"iota\",\"n\":1000000}}",
                 false);
    /* A kernel nobody compiled: compiled on a worker; then in memory, so inline. */
    char body[200];
    snprintf(body, sizeof body, "{\"type\":\"i32\",\"op\":\"a + b + %ld\",\"compile\":true,\"data\":[1,2]}",
             (long)(time(NULL) % 100000) + 17);
    counts c0 = now_counts();
    int status;
    cJSON *o = post_json("/v1/reduce", body, &status);
    counts c1 = now_counts();
    CHECKF(status == 200 && str_at(o, "cache", NULL) && !strcmp(str_at(o, "cache", NULL), "compile") &&
               c1.def == c0.def + 1,
           "cold: status %d cache %s", status, str_at(o, "cache", NULL));
    cJSON_Delete(o);
    o = post_json("/v1/reduce", body, &status);
    counts c2 = now_counts();
    CHECKF(status == 200 && str_at(o, "cache", NULL) && !strcmp(str_at(o, "cache", NULL), "memory") &&
               c2.inl == c1.inl + 1,
           "warm: status %d cache %s", status, str_at(o, "cache", NULL));
    cJSON_Delete(o);
    /* a buffer: by its size */
    big[0] = 0;
    k = (size_t)sprintf(big, "{\"type\":\"f32\",\"data\":[");
    for (size_t i = 0; i < 20000; i++) k += (size_t)sprintf(big + k, "1%s", i + 1 < 20000 ? "," : "]}");
    hc_resp r;
    char id[64] = "";
    if (call("PUT", "/v1/buffers", json_hdr, big, k, 0, &r) == 0 && r.status == 201) {
        const char *p = strstr(r.body, "\"id\":\"");
        if (p) sscanf(p + 6, "%63[^\"]", id);
    }
    hc_resp_free(&r);
    CHECK(id[0]);
    snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\",\"count\":100}", id);
    expect_route("100 of a buffer", body, true);
    snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\"}", id);
    expect_route("all 20000 of a buffer (80 KB)", body, false);
    snprintf(body, sizeof body, "/v1/buffers/%s", id);
    call("DELETE", body, NULL, NULL, 0, 0, &r);
    hc_resp_free(&r);
    free(big);
}

/* ---- 2. "data" in place, against cJSON ---- */

/* The response without its timing and its error's request_id (each request has its own); bad_json's
 * byte position shifted back by the forced body's prefix. */
static char *canonical(const char *text, size_t n, int shift) {
    cJSON *o = cJSON_ParseWithLength(text, n);
    if (!o) return strdup("(not JSON)");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "timing");
    cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    cJSON_DeleteItemFromObjectCaseSensitive(e, "request_id");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    unsigned long at;
    if (cJSON_IsString(m) && sscanf(m->valuestring, "invalid JSON near byte %lu", &at) == 1) {
        char msg[64];
        snprintf(msg, sizeof msg, "invalid JSON near byte %lu", at - (unsigned long)shift);
        cJSON_SetValuestring(m, msg);
    } else if (cJSON_IsString(m) &&
               sscanf(m->valuestring, "unexpected bytes after the JSON object, at byte %lu", &at) == 1) {
        char msg[80];
        snprintf(msg, sizeof msg, "unexpected bytes after the JSON object, at byte %lu", at - (unsigned long)shift);
        cJSON_SetValuestring(m, msg);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int compared, fast_ok, fast_err;

/* body must start with '{' and hold no "check". */
static void same_both_ways(const char *path, const char *body, size_t n) {
    static const char prefix[] = "\"\\u0063heck\":false,";
    size_t pn = sizeof prefix - 1;
    char *forced = malloc(n + pn + 1);
    memcpy(forced, body, 1);
    memcpy(forced + 1, prefix, pn);
    memcpy(forced + 1 + pn, body + 1, n - 1);
    forced[n + pn] = 0;
    hc_resp a, b;
    if (call("POST", path, json_hdr, body, n, 0, &a) == 0 && call("POST", path, json_hdr, forced, n + pn, 0, &b) == 0) {
        char *ca = canonical(a.body, a.body_len, 0), *cb = canonical(b.body, b.body_len, (int)pn);
        CHECKF(a.status == b.status && !strcmp(ca, cb), "%.300s\n    in place: %d %.300s\n    cJSON:    %d %.300s",
               body, a.status, ca, b.status, cb);
        compared++;
        if (a.status == 200)
            fast_ok++;
        else
            fast_err++;
        free(ca);
        free(cb);
        hc_resp_free(&b);
    } else {
        CHECK(0);
    }
    hc_resp_free(&a);
    free(forced);
}

static void same_text(const char *path, const char *body) { same_both_ways(path, body, strlen(body)); }

static const char *const edge_bodies[] = {
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1,2.5]}",
    "{\"type\":\"u32\",\"op\":\"sum\",\"data\":[-0.0]}",
    "{\"type\":\"u32\",\"op\":\"sum\",\"data\":[1,-1]}",
    "{\"type\":\"u32\",\"op\":\"sum\",\"data\":[4294967296]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[2147483648]}",
    "{\"type\":\"i64\",\"op\":\"sum\",\"data\":[9007199254740993]}",
    "{\"type\":\"i64\",\"op\":\"sum\",\"data\":[9007199254740992, \"9007199254740993\", \"-9223372036854775808\"]}",
    "{\"type\":\"u64\",\"op\":\"max\",\"data\":[\"18446744073709551615\", \"0x10\", \"077\"]}",
    "{\"type\":\"u64\",\"op\":\"max\",\"data\":[\"18446744073709551616\"]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[\"abc\"]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[\"\"]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[\"2147483648\"]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[\"nan\"]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[\"1.5x\"]}",
    "{\"type\":\"f32\",\"op\":\"max\",\"data\":[\"NaN\",\"Infinity\",\"+Infinity\",\"-Infinity\",\"0x1p3\",\"1e400\"]}",
    "{\"type\":\"f32\",\"op\":\"max\",\"data\":[1.0000000596046447753906250000000001]}",
    "{\"type\":\"f32\",\"op\":\"max\",\"data\":[\"1.0000000596046447753906250000000001\"]}",
    "{\"type\":\"f16\",\"op\":\"max\",\"accumulate\":\"native\",\"data\":[65520]}",
    "{\"type\":\"f16\",\"op\":\"min\",\"data\":[65519, 1e-8, 5.9604644775390625e-8, \"-Infinity\"]}",
    "{\"type\":\"bf16\",\"op\":\"max\",\"data\":[1.00390625]}",
    "{\"type\":\"bf16\",\"op\":\"max\",\"data\":[1.0039062500000001]}",
    "{\"type\":\"f64\",\"op\":\"sum\",\"data\":[1., -.5, 01, 1E2, 1e+0, 0.1e-1]}",
    "{\"type\":\"f64\",\"op\":\"max\",\"data\":[1e400, -1e400, 4.9e-324, 2.4703282292062328e-324]}",
    "{\"type\":\"f64\",\"op\":\"sum\",\"data\":[0.1234567890123456789012345, 123456789012345678901234567890]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1,]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1 2]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1,,2]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[-]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1e]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[.5]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[+1]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[0x10]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1,2}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1,2]",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[true]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[null]}",
    "{\"type\":\"i64\",\"op\":\"sum\",\"data\":[[1]]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[{\"bits\":\"0x3f800000\"}, 2]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[{\"bits\":\"zz\"}]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1,\"\\u0032\"]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1,\x01 2,\t3\r\n]}",
    "{\"op\":\"sum\",\"data\":[\"9007199254740993\",\"1\"],\"type\":\"i64\"}",
    "{\"op\":\"sum\",\"data\":[1,2.5],\"type\":\"i32\"}",
    "{\"op\":\"sum\",\"data\":[1,2],\"type\":\"f99\"}",
    "{\"colour\":1,\"type\":\"f32\",\"data\":[1,]}",
    "{\"colour\":1,\"type\":\"f32\",\"data\":[1]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1],\"data\":[5]}",
    "{\"type\":\"i32\",\"op\":\"sum\",\"d\\u0061ta\":[7],\"data\":[1]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":\"1,2\"}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[ ]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1], \"x\": }",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1]} trailing",
    "{\"type\":\"f32\",\"op\":\"xor\",\"data\":[1]}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1],\"data_b64\":\"AAAAAA==\"}",
    "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
    "1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
};

static const char *const types[] = {"i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16"};

static uint64_t rng = 0x853c49e6748fea9bull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* One valid value of type t, in a form a client might send. */
static int gen_value(char *out, size_t cap, const char *t) {
    int r = (int)(rnd() % 20);
    bool is_int = t[0] == 'i' || t[0] == 'u', is_signed = t[0] == 'i', wide = strstr(t, "64") != NULL;
    if (is_int) {
        int bits = wide ? 52 : 30;
        long long v = (long long)(rnd() >> (64 - bits)) >> (rnd() % bits); /* magnitudes of every size */
        if (is_signed && rnd() % 2) v = -v;
        if (r < 13) return snprintf(out, cap, "%lld", v);
        if (r < 16 && wide) /* beyond 2^53: only as a string */
            return is_signed ? snprintf(out, cap, "\"%lld\"", (long long)rnd())
                             : snprintf(out, cap, "\"%llu\"", (unsigned long long)rnd());
        if (r < 16) return snprintf(out, cap, "\"%lld\"", v);
        if (r < 18) return snprintf(out, cap, "%lld.0", v);
        return snprintf(out, cap, "%lldE0", v);
    }
    if (r < 8) return snprintf(out, cap, "%.6f", (double)(rnd() >> 11) / 9007199254740992.0);
    if (r < 11) return snprintf(out, cap, "%.17g", ldexp((double)(rnd() >> 11), (int)(rnd() % 120) - 80));
    if (r < 13) return snprintf(out, cap, "%.9g", (double)(float)ldexp((double)(rnd() >> 40), (int)(rnd() % 40) - 20));
    if (r < 15) return snprintf(out, cap, "%lld", (long long)(rnd() % 200001) - 100000);
    if (r < 16) return snprintf(out, cap, "\"%s\"", (const char *[]){"NaN", "Infinity", "-Infinity"}[rnd() % 3]);
    if (r < 17) return snprintf(out, cap, "\"%.9g\"", ldexp((double)(rnd() >> 30), (int)(rnd() % 60) - 40));
    if (r < 18) return snprintf(out, cap, "%.3e", ldexp((double)(rnd() >> 11), (int)(rnd() % 200) - 150));
    return snprintf(out, cap, "%.20g",
                    ldexp(1.0 + (double)(rnd() % 1024) / 1024, (int)(rnd() % 30) - 15) +
                        ldexp(1, (int)(rnd() % 40) - 60));
}

static void test_in_place(void) {
    T_CASE("data in place answers as cJSON does: edge cases");
    for (size_t i = 0; i < sizeof edge_bodies / sizeof *edge_bodies; i++) same_text("/v1/reduce", edge_bodies[i]);
    T_CASE("data in place answers as cJSON does: random lists, every type, read back element by element");
    size_t cap = 4u << 20;
    char *body = malloc(cap);
    for (int round = 0; round < 24; round++) {
        const char *t = types[round % 8];
        bool is_int = t[0] == 'i' || t[0] == 'u';
        int n = round < 16 ? 2000 : 60000;
        size_t k = 0;
        /* warp_scan of width 1 hands every element back, in the form it came (JSON): the bits as read */
        k += (size_t)snprintf(body + k, cap - k,
                              "{\"family\":\"warp_scan\",\"width\":1,\"op\":\"max\",\"type\":\"%s\",\"output\":\"b64\","
                              "\"data\":[",
                              t);
        for (int i = 0; i < n; i++) {
            k += (size_t)gen_value(body + k, cap - k, t);
            body[k++] = i + 1 < n ? ',' : ']';
        }
        k += (size_t)snprintf(body + k, cap - k, "}");
        same_both_ways("/v1/scan", body, k);
        /* and one element the type refuses, somewhere: the error names it the same way */
        if (is_int) {
            char *at = strstr(body + 100, ",");
            if (at) {
                memcpy(at + 1, "\"x\"", 3);
                same_both_ways("/v1/scan", body, k);
            }
        }
    }
    printf("data in place: %d request pairs compared (%d answered 200, %d errors)\n", compared, fast_ok, fast_err);
    free(body);
}

/* ---- 3. raw bodies streamed ---- */

static double value_of(const hc_resp *r) {
    cJSON *o = cJSON_ParseWithLength(r->body, r->body_len);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "value");
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    cJSON_Delete(o);
    return d;
}

static bool is_error(const hc_resp *r, int status, const char *code, const char *field) {
    cJSON *o = cJSON_ParseWithLength(r->body, r->body_len);
    const char *c = str_at(o, "error", "code"), *f = str_at(o, "error", "field");
    bool ok = r->status == status && c && !strcmp(c, code) && (!field || (f && !strcmp(f, field)));
    if (!ok) fprintf(stderr, "  got %d %.300s\n", r->status, r->body);
    cJSON_Delete(o);
    return ok;
}

static double buffer_bytes(void) {
    hc_resp r;
    double v = -1;
    if (call("GET", "/v1/buffers", NULL, NULL, 0, 0, &r) == 0) {
        cJSON *o = cJSON_ParseWithLength(r.body, r.body_len);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "bytes");
        v = cJSON_IsNumber(b) ? b->valuedouble : -1;
        cJSON_Delete(o);
    }
    hc_resp_free(&r);
    return v;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *b64(const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63], *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=', *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static void test_streamed(void) {
    size_t n = 3u << 20; /* 786432 f32 */
    float *f = malloc(n);
    for (size_t i = 0; i < n / 4; i++) f[i] = (float)((i * 2654435761u) % 1000) / 8.0f;
    hc_resp r;

    T_CASE("raw body streamed: the value of the same data as base64, and as a chunked body");
    double s0 = metric("warpd_http_streamed_bodies_total"), b0 = metric("warpd_http_streamed_bytes_total");
    CHECK(call("POST", "/v1/reduce?type=f32&op=sum", raw_hdr, f, n, 0, &r) == 0 && r.status == 200);
    double streamed = value_of(&r);
    cJSON *o = cJSON_ParseWithLength(r.body, r.body_len);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "timing");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "receive_us")) &&
          cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "parse_us")));
    cJSON_Delete(o);
    hc_resp_free(&r);
    CHECK(metric("warpd_http_streamed_bodies_total") == s0 + 1 && metric("warpd_http_streamed_bytes_total") == b0 + n);
    CHECK(call("POST", "/v1/reduce?type=f32&op=sum", raw_hdr, f, n, HC_CHUNKED, &r) == 0 && r.status == 200);
    double chunked = value_of(&r);
    hc_resp_free(&r);
    CHECK(metric("warpd_http_streamed_bodies_total") == s0 + 1); /* chunked: gathered */
    char *text = b64((const unsigned char *)f, n);
    size_t tn = strlen(text) + 64;
    char *body = malloc(tn);
    snprintf(body, tn, "{\"type\":\"f32\",\"op\":\"sum\",\"data_b64\":\"%s\"}", text);
    CHECK(call("POST", "/v1/reduce", json_hdr, body, strlen(body), 0, &r) == 0 && r.status == 200);
    double based = value_of(&r);
    hc_resp_free(&r);
    CHECKF(streamed == chunked && streamed == based && !isnan(streamed), "streamed %.9g chunked %.9g base64 %.9g",
           streamed, chunked, based);
    free(body);
    free(text);

    T_CASE("raw scan streamed in, raw out");
    const char *const raw_both[] = {"Content-Type: application/octet-stream", "Accept: application/octet-stream", NULL};
    int32_t *xs = malloc(n);
    for (size_t i = 0; i < n / 4; i++) xs[i] = (int32_t)(i % 7) - 3;
    if (call("POST", "/v1/scan?type=i32&op=sum", raw_both, xs, n, 0, &r) == 0 && r.status == 200 && r.body_len == n) {
        int32_t acc = 0, bad = 0;
        for (size_t i = 0; i < n / 4; i++) {
            acc += xs[i];
            int32_t got;
            memcpy(&got, r.body + 4 * i, 4);
            bad += got != acc;
        }
        CHECKF(bad == 0, "%d prefix sums differ", bad);
    } else
        CHECKF(0, "raw scan: status %d, %zu bytes", r.status, r.body_len);
    hc_resp_free(&r);
    free(xs);

    T_CASE("refused before the body: length, query, operator, backend");
    CHECK(call("POST", "/v1/reduce?type=f32&op=sum", raw_hdr, f, n - 2, 0, &r) == 0 &&
          is_error(&r, 400, "bad_length", "body"));
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/reduce?type=f99&op=sum", raw_hdr, f, n, 0, &r) == 0 && r.status == 400);
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/reduce?type=f32", raw_hdr, f, n, 0, &r) == 0 && is_error(&r, 400, "missing_field", "op"));
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/reduce?type=f32&op=xor", raw_hdr, f, n, 0, &r) == 0 && is_error(&r, 400, "bad_op", "op"));
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/scan?type=i32&op=sum&block=2000&family=block_scan", raw_hdr, f, n, 0, &r) == 0 &&
          is_error(&r, 400, "bad_block", "block"));
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/reduce?type=f32&op=sum&backend=cuda", raw_hdr, f, n, 0, &r) == 0 && r.status == 409);
    hc_resp_free(&r);
    CHECK(call("PUT", "/v1/buffers", raw_hdr, f, n, 0, &r) == 0 && is_error(&r, 400, "missing_field", "type"));
    hc_resp_free(&r);
    CHECK(call("PUT", "/v1/buffers?type=f64", raw_hdr, f, n - 4, 0, &r) == 0 &&
          is_error(&r, 400, "bad_length", "body"));
    hc_resp_free(&r);
    CHECK(metric("warpd_http_streamed_bodies_total") == s0 + 2);

    T_CASE("PUT /v1/buffers streamed: the bytes, then a reduce by id");
    double bytes0 = buffer_bytes();
    char id[64] = "", path[128];
    if (call("PUT", "/v1/buffers?type=f32", raw_hdr, f, n, 0, &r) == 0 && r.status == 201) {
        const char *p = strstr(r.body, "\"id\":\"");
        if (p) sscanf(p + 6, "%63[^\"]", id);
    }
    hc_resp_free(&r);
    CHECK(id[0] && metric("warpd_http_streamed_bodies_total") == s0 + 3);
    snprintf(path, sizeof path, "/v1/buffers/%s?data=raw", id);
    CHECK(call("GET", path, NULL, NULL, 0, 0, &r) == 0 && r.status == 200 && r.body_len == n && !memcmp(r.body, f, n));
    hc_resp_free(&r);
    snprintf(path, sizeof path, "{\"buffer\":\"%s\",\"op\":\"sum\"}", id);
    CHECK(call("POST", "/v1/reduce", json_hdr, path, strlen(path), 0, &r) == 0 && value_of(&r) == streamed);
    hc_resp_free(&r);
    snprintf(path, sizeof path, "/v1/buffers/%s", id);
    call("DELETE", path, NULL, NULL, 0, 0, &r);
    hc_resp_free(&r);

    T_CASE("a client that goes away mid-body leaves no buffer behind");
    const char *paths[] = {"/v1/buffers?type=f32", "/v1/reduce?type=f32&op=sum"};
    for (int i = 0; i < 2; i++) {
        hc_conn c;
        if (hc_open(&c, host, port, 0)) continue;
        char head[256];
        snprintf(head, sizeof head,
                 "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\nContent-Length: "
                 "%zu\r\n\r\n",
                 i ? "POST" : "PUT", paths[i], n);
        hc_write(&c, head, strlen(head), false);
        hc_write(&c, f, n / 3, false);
        sleep_ms(50);
        hc_close(&c);
    }
    double bytes1 = -2;
    for (int i = 0; i < 200 && (bytes1 = buffer_bytes()) != bytes0; i++) sleep_ms(10);
    CHECKF(bytes1 == bytes0, "buffer bytes %.0f, before %.0f", bytes1, bytes0);
    CHECK(call("GET", "/v1/health", NULL, NULL, 0, 0, &r) == 0 && r.status == 200);
    hc_resp_free(&r);
    free(f);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BASE_URL\n", argv[0]);
        return 2;
    }
    char prefix[64];
    if (hc_parse_url(argv[1], host, sizeof host, &port, prefix, sizeof prefix)) return 2;
    test_inline();
    test_in_place();
    test_streamed();
    return t_done("api_reduce_paths");
}
