/* batch_rounds.h — the rounds of the batching tests, shared by tests/api/api_batch.c (emu, in CI) and
 * tests/gpu/test_gpu_batch.c (a cuda daemon): requests asked alone one at a time, then all at once
 * (a barrier), each concurrent answer compared with its alone answer up to "backend" — the result,
 * bit for bit. */
#ifndef WP_BATCH_ROUNDS_H
#define WP_BATCH_ROUNDS_H

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/unit/t.h"
#include "util/base64.h"

#define MAX_CLIENTS 16
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define BODY_MAX (96 << 10) /* 64 KiB of base64 input and the spec */

typedef enum { MODE_ANY, MODE_WINDOW, MODE_OFF } batch_mode;

typedef struct {
    const char *host;
    int port;
    const char *path;
    char body[BODY_MAX];
    hc_resp resp;
    int rc;
    pthread_barrier_t *start;
} client;

static batch_mode mode = MODE_ANY;
static int rounds_batched;       /* rounds in which some response had a batch of more than one */
static bool expect_batch_kernel; /* cuda: a data job batched with others ran the _batch kernel */
static int batch_kernel_runs;    /* responses that say so (their key ends in /batch) */
/* Where the alone answers come from: 0, the daemon under test; else a daemon on this port started with
 * --batch-max 1, whose jobs all take their own path (on cuda a small job alone on a batching daemon
 * runs the _batch kernel as a batch of one, so the reference must come from elsewhere). */
static int ref_port;

static void *run_client(void *arg) {
    client *c = arg;
    if (c->start) pthread_barrier_wait(c->start);
    c->rc = hc_request(c->host, c->port, "POST", c->path, NULL, c->body, strlen(c->body), 0, &c->resp, NULL, 0);
    return NULL;
}

/* The part of a response that is the job's result: everything before "backend" (timing-free). */
static size_t result_prefix(const char *body) {
    const char *p = strstr(body, "\"backend\"");
    return p ? (size_t)(p - body) : strlen(body);
}

static int batch_size(const char *body) {
    const char *p = body ? strstr(body, "\"batch\":{\"size\":") : NULL;
    return p ? atoi(p + 16) : -1;
}

/* An unlabelled sample of GET /metrics, or -1 when it is missing: metric_value for gauges in base units
 * (seconds), metric for counts. */
static double metric_value(const char *host, int port, const char *name) {
    hc_resp r;
    if (hc_request(host, port, "GET", "/metrics", NULL, NULL, 0, 0, &r, NULL, 0)) return -1;
    char key[96];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = r.body ? strstr(r.body, key) : NULL;
    double v = p ? strtod(p + strlen(key), NULL) : -1;
    hc_resp_free(&r);
    return v;
}

static long long metric(const char *host, int port, const char *name) {
    return (long long)metric_value(host, port, name);
}

/* Fires n requests at once (a barrier), after asking each alone first; checks each against its
 * alone answer. bad[i]: request i is refused (400) before it could batch. */
static void round_of(const char *host, int port, const char *path, char bodies[][BODY_MAX], int n, const bool *bad,
                     const char *what) {
    client *alone = calloc(MAX_CLIENTS, sizeof *alone), *together = calloc(MAX_CLIENTS, sizeof *together);
    if (!alone || !together) {
        CHECKF(0, "%s: out of memory", what);
        free(alone);
        free(together);
        return;
    }
    for (int i = 0; i < n; i++) { /* one at a time: each is a batch of its own */
        alone[i] = (client){.host = host, .port = ref_port ? ref_port : port, .path = path};
        snprintf(alone[i].body, sizeof alone[i].body, "%s", bodies[i]);
        run_client(&alone[i]);
        int want = bad && bad[i] ? 400 : 200;
        CHECKF(alone[i].rc == 0 && alone[i].resp.status == want, "%s: alone %d: status %d (%s)", what, i,
               alone[i].resp.status, alone[i].resp.body ? alone[i].resp.body : "");
        if (want == 200) CHECKF(batch_size(alone[i].resp.body) == 1, "%s: alone %d: batch size is not 1", what, i);
    }
    /* Against a reference, the daemon under test sees the key first here: a round of it at once (not
     * checked) asks for its _batch kernel, built in the background; then the round that counts, once
     * nothing is queued for building (on emu nothing ever is). */
    for (int pass = ref_port ? 0 : 1; pass < 2; pass++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)n);
        pthread_t th[MAX_CLIENTS];
        for (int i = 0; i < n; i++) {
            if (pass == 1 && together[i].resp.body) hc_resp_free(&together[i].resp);
            together[i] = alone[i];
            together[i].port = port;
            together[i].start = &start;
            memset(&together[i].resp, 0, sizeof together[i].resp);
            pthread_create(&th[i], NULL, run_client, &together[i]);
        }
        for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&start);
        for (int w = 0; pass == 0 && w < 200 && metric(host, port, "warpd_background_builds_queued") > 0; w++)
            usleep(50 * 1000);
    }
    int max_size = 0;
    for (int i = 0; i < n; i++) {
        const hc_resp *a = &alone[i].resp, *t = &together[i].resp;
        int want = bad && bad[i] ? 400 : 200;
        CHECKF(together[i].rc == 0 && t->status == want, "%s: request %d: status %d (%s)", what, i, t->status,
               t->body ? t->body : "");
        if (together[i].rc || t->status != 200 || !a->body || !t->body) continue;
        size_t na = result_prefix(a->body), nt = result_prefix(t->body);
        CHECKF(na == nt && !memcmp(a->body, t->body, na), "%s: request %d differs from alone:\n  %.*s\n  %.*s", what, i,
               (int)na, a->body, (int)nt, t->body);
        int size = batch_size(t->body);
        CHECKF(size >= 1 && size <= n, "%s: request %d: batch size %d", what, i, size);
        if (mode == MODE_OFF) CHECKF(size == 1, "%s: request %d: batch size %d with --batch-max 1", what, i, size);
        if (size > max_size) max_size = size;
        bool cuda = strstr(t->body, "\"backend\":\"cuda\"") != NULL,
             data = !strcmp(path, "/v1/reduce") || !strcmp(path, "/v1/scan");
        if (expect_batch_kernel && cuda && data && size > 1) {
            bool batched_key = strstr(t->body, "/batch\",") != NULL;
            CHECKF(batched_key, "%s: request %d: a batch of %d on cuda did not run the _batch kernel", what, i, size);
            batch_kernel_runs += batched_key;
        }
    }
    if (max_size > 1) rounds_batched++;
    for (int i = 0; i < n; i++) {
        hc_resp_free(&alone[i].resp);
        hc_resp_free(&together[i].resp);
    }
    free(alone);
    free(together);
}

static unsigned long long rng = 88172645463325252ull;
static unsigned next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* A JSON list of n values: integers, or floats with a fraction (they round differently by order). */
static void values(char *out, size_t cap, int n, bool floats) {
    size_t at = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < n && at < cap; i++) {
        if (floats)
            at += (size_t)snprintf(out + at, cap - at, "%s%.3f", i ? "," : "",
                                   (double)(next_rand() % 20000) / 7.0 - 1000.0);
        else
            at += (size_t)snprintf(out + at, cap - at, "%s%d", i ? "," : "", (int)(next_rand() % 2000) - 1000);
    }
    if (at < cap) snprintf(out + at, cap - at, "]");
}

/* Every warp family: the same spec, different random input per request. */
static void warp_rounds(const char *host, int port) {
    static const struct {
        const char *family, *type, *extra;
    } cases[] = {{"shfl", "i32", ",\"args\":{\"src_lane\":3}"},
                 {"shfl_up", "f32", ",\"args\":{\"delta\":2},\"width\":16"},
                 {"shfl_down", "i64", ",\"args\":{\"delta\":1}"},
                 {"shfl_xor", "u32", ",\"args\":{\"lane_mask\":5}"},
                 {"swap", "i32", ""},
                 {"vote_all", "i32", ",\"args\":{\"pred\":{\"op\":\"gt\",\"value\":10}}"},
                 {"vote_any", "i32", ",\"args\":{\"pred\":{\"op\":\"lt\",\"value\":5}}"},
                 {"vote_uni", "u32", ""},
                 {"ballot", "i32", ",\"args\":{\"pred\":{\"op\":\"ge\",\"value\":50}},\"width\":8"},
                 {"activemask", "u32", ""},
                 {"match_any", "i32", ""},
                 {"match_all", "u32", ""},
                 {"redux", "i32", ",\"op\":\"max\""},
                 {"warp_allreduce", "f32", ",\"op\":\"sum\",\"width\":16"},
                 {"warp_allreduce", "i32", ",\"op\":\"a + b * 3\""},
                 {"ds_permute", "i32", ""},
                 {"ds_bpermute", "f32", ""}};
    static char bodies[8][BODY_MAX];
    for (size_t c = 0; c < NELEMS(cases); c++) {
        for (int i = 0; i < 8; i++) {
            int lanes = 33 + 29 * i;              /* a partial last warp, and a different count each time */
            if (!strcmp(cases[c].family, "swap")) /* arrays of 2 per lane */
                snprintf(bodies[i], BODY_MAX,
                         "{\"family\":\"swap\",\"type\":\"i32\",\"input\":{\"random\":%d,\"seed\":%d,\"elems\":2},"
                         "\"args\":{\"lane_mask\":1}}",
                         lanes, i + 1);
            else
                snprintf(bodies[i], BODY_MAX,
                         "{\"family\":\"%s\",\"type\":\"%s\",\"input\":{\"random\":%d,\"seed\":%d}%s}", cases[c].family,
                         cases[c].type, lanes, 100 + i, cases[c].extra);
        }
        char what[96];
        snprintf(what, sizeof what, "warp %s/%s", cases[c].family, cases[c].type);
        round_of(host, port, "/v1/warp", bodies, 8, NULL, what);
    }
}

/* The reduce and scan families, several types and ops; n varies within one block size class. */
static void data_rounds(const char *host, int port) {
    static const struct {
        const char *path, *spec;
        bool floats, offsets;
        int n;
    } cases[] = {
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"sum\"", true, false, 300},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"i32\",\"op\":\"max\",\"strategy\":\"smem\"", false,
         false, 500},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f64\",\"op\":\"min\",\"strategy\":\"gmem\"", true,
         false, 200},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f16\",\"op\":\"sum\"", true, false, 100},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"var\",\"ddof\":1", true, false, 300},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"i32\",\"op\":\"count_nonzero\"", false, false, 400},
        {"/v1/reduce", "\"family\":\"argmin\",\"type\":\"f32\"", true, false, 700},
        {"/v1/reduce", "\"family\":\"argmax\",\"type\":\"i64\"", false, false, 400},
        {"/v1/reduce", "\"family\":\"warp_reduce\",\"type\":\"f32\",\"op\":\"sum\",\"width\":8", true, false, 300},
        {"/v1/reduce", "\"family\":\"block_reduce\",\"type\":\"i32\",\"op\":\"sum\",\"block\":64", false, false, 300},
        {"/v1/reduce", "\"family\":\"segmented_reduce\",\"type\":\"f32\",\"op\":\"sum\"", true, true, 150},
        {"/v1/scan", "\"family\":\"device_scan\",\"type\":\"f32\",\"op\":\"sum\"", true, false, 1000},
        {"/v1/scan", "\"family\":\"device_scan\",\"type\":\"i32\",\"op\":\"sum\",\"exclusive\":true,\"init\":7", false,
         false, 1500},
        {"/v1/scan", "\"family\":\"warp_scan\",\"type\":\"f32\",\"op\":\"max\",\"width\":16", true, false, 200},
        {"/v1/scan", "\"family\":\"block_scan\",\"type\":\"i64\",\"op\":\"sum\",\"block\":128", false, false, 400},
        {"/v1/scan", "\"family\":\"stencil\",\"type\":\"f32\",\"radius\":2", true, false, 250},
        /* maps over one input (transform-reduce) batch like any kernel: the _batch entries read through the map */
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"sum\",\"map\":\"x*x\"", true, false,
         300},
        {"/v1/reduce", "\"family\":\"argmax\",\"type\":\"f32\",\"map\":\"abs(x)\"", true, false, 600},
        {"/v1/reduce", "\"family\":\"warp_reduce\",\"type\":\"i32\",\"map\":\"x > 0 ? 1 : 0\",\"width\":8", false,
         false, 300},
        {"/v1/scan", "\"family\":\"device_scan\",\"type\":\"f32\",\"op\":\"sum\",\"map\":\"x*x\"", true, false, 1000},
    };
    static char bodies[8][BODY_MAX];
    char list[BODY_MAX - 512];
    for (size_t c = 0; c < NELEMS(cases); c++) {
        for (int i = 0; i < 8; i++) {
            int n = cases[c].n - 7 * i;
            values(list, sizeof list, n, cases[c].floats);
            char offs[128] = "";
            if (cases[c].offsets) snprintf(offs, sizeof offs, ",\"offsets\":[0,3,3,%d,%d,%d]", n / 3, n / 2, n);
            snprintf(bodies[i], BODY_MAX, "{%s,\"data\":%s%s}", cases[c].spec, list, offs);
        }
        char what[128];
        snprintf(what, sizeof what, "%s {%s}", cases[c].path, cases[c].spec);
        round_of(host, port, cases[c].path, bodies, 8, NULL, what);
    }
}

/* 16 at once, one key; then two keys side by side; then bad ones among good ones. */
static void mixed_rounds(const char *host, int port) {
    static char bodies[MAX_CLIENTS][BODY_MAX];
    char list[2048];
    for (int i = 0; i < MAX_CLIENTS; i++) {
        values(list, sizeof list, 100 + i, true);
        snprintf(bodies[i], BODY_MAX, "{\"type\":\"f32\",\"op\":\"sum\",\"data\":%s}", list);
    }
    round_of(host, port, "/v1/reduce", bodies, MAX_CLIENTS, NULL, "16 device_reduce f32 sum");
    for (int i = 0; i < MAX_CLIENTS; i++) {
        values(list, sizeof list, 100 + i, false);
        snprintf(bodies[i], BODY_MAX, "{\"type\":\"i32\",\"op\":\"%s\",\"data\":%s}", i % 2 ? "max" : "sum", list);
    }
    round_of(host, port, "/v1/reduce", bodies, MAX_CLIENTS, NULL, "sum and max side by side");
    bool bad[MAX_CLIENTS] = {0};
    for (int i = 0; i < MAX_CLIENTS; i++) {
        values(list, sizeof list, 60 + i, false);
        bad[i] = i % 4 == 1;
        snprintf(bodies[i], BODY_MAX, "{\"type\":\"i32\",\"op\":\"sum\",\"data\":%s%s}", bad[i] ? "[1,\"x\",3]" : list,
                 "");
    }
    round_of(host, port, "/v1/reduce", bodies, MAX_CLIENTS, bad, "bad requests among good ones");
    for (int i = 0; i < MAX_CLIENTS; i++) /* base64 input, array results */
        snprintf(bodies[i], BODY_MAX, "{\"family\":\"device_scan\",\"type\":\"u32\",\"data_b64\":\"%s\"}",
                 i % 2 ? "AQAAAAIAAAADAAAA" : "BQAAAAYAAAAHAAAACAAAAA==");
    round_of(host, port, "/v1/scan", bodies, MAX_CLIENTS, NULL, "device_scan of base64 input");
}

/* n random elements of type f32 (finite), i32 or f64 as base64 (little-endian, as the API reads it). */
static char *b64_values(int n, char type) {
    size_t esize = type == 'd' ? 8 : 4;
    uint8_t *raw = malloc((size_t)n * esize);
    if (!raw) return NULL;
    for (int i = 0; i < n; i++) {
        if (type == 'f') {
            float v = (float)((double)(next_rand() % 200000) / 7.0 - 10000.0);
            memcpy(raw + (size_t)i * 4, &v, 4);
        } else if (type == 'd') {
            double v = (double)(next_rand() % 200000) / 3.0 - 30000.0;
            memcpy(raw + (size_t)i * 8, &v, 8);
        } else {
            int32_t v = (int32_t)(next_rand() % 200000) - 100000;
            memcpy(raw + (size_t)i * 4, &v, 4);
        }
    }
    char *text = wp_b64_encode(raw, (size_t)n * esize);
    free(raw);
    return text;
}

/* Up to 64 KiB each (base64): several blocks per job — tickets (argmin), tile look-back (device_scan),
 * one block of 1024 (device_reduce at 64 KiB), many independent blocks (warp_reduce, stencil). */
static void big_rounds(const char *host, int port) {
    static const struct {
        const char *path, *spec;
        char type;
        int n;
    } cases[] = {
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"sum\"", 'f', 16384},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"i32\",\"op\":\"sum\",\"block\":128", 'i', 16000},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"std\"", 'f', 16384},
        {"/v1/reduce", "\"family\":\"device_reduce\",\"type\":\"f64\",\"op\":\"norm2\",\"block\":128", 'd', 8000},
        {"/v1/reduce", "\"family\":\"argmin\",\"type\":\"f32\"", 'f', 16000},
        {"/v1/reduce", "\"family\":\"argmax\",\"type\":\"f64\"", 'd', 8000},
        {"/v1/reduce", "\"family\":\"warp_reduce\",\"type\":\"i32\",\"op\":\"max\"", 'i', 16000},
        {"/v1/scan", "\"family\":\"device_scan\",\"type\":\"f32\",\"op\":\"sum\"", 'f', 16000},
        {"/v1/scan", "\"family\":\"device_scan\",\"type\":\"f64\",\"op\":\"sum\",\"exclusive\":true", 'd', 8000},
        {"/v1/scan", "\"family\":\"device_scan\",\"type\":\"i32\",\"op\":\"max\",\"strategy\":\"smem\"", 'i', 16000},
        {"/v1/scan", "\"family\":\"block_scan\",\"type\":\"f32\",\"op\":\"sum\"", 'f', 16000},
        {"/v1/scan", "\"family\":\"stencil\",\"type\":\"f32\",\"radius\":3", 'f', 12000},
    };
    static char bodies[8][BODY_MAX];
    for (size_t c = 0; c < NELEMS(cases); c++) {
        for (int i = 0; i < 8; i++) {
            char *text = b64_values(cases[c].n - 5 * i, cases[c].type);
            snprintf(bodies[i], BODY_MAX, "{%s,\"data_b64\":\"%s\"}", cases[c].spec, text ? text : "");
            free(text);
        }
        char what[160];
        snprintf(what, sizeof what, "%s {%s} n=%d", cases[c].path, cases[c].spec, cases[c].n);
        round_of(host, port, cases[c].path, bodies, 8, NULL, what);
    }
}

/* Every round both programs run: warp families, reduce and scan families, inputs up to 64 KiB, mixed keys. */
static void all_rounds(const char *host, int port) {
    T_CASE("warp families");
    warp_rounds(host, port);
    T_CASE("reduce and scan families");
    data_rounds(host, port);
    T_CASE("up to 64 KiB: several blocks a job");
    big_rounds(host, port);
    T_CASE("one key, two keys, bad requests, base64");
    mixed_rounds(host, port);
}

#endif
