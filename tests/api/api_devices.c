/* api_devices.c — against a live daemon, the devices it serves on (multi-device placement): GET /v1/info's "devices",
 * /v1/ready, placement (a pinned "device", the least-loaded device for the rest, a job over a buffer
 * where the buffer lives), and a lost device (503 when pinned, skipped otherwise). It adapts to what
 * the daemon has: tests/api/devices.sh starts it with --emu-devices 1, 2 and 3 and with one device
 * marked lost (WARPD_EMU_FAIL_DEVICE); api.sh runs it against the plain daemon; bench/gpu.sh check
 * against cuda on the GPUs there are. Sharded buffers: split over every usable device (n below,
 * at and not divisible by the device count), reduce (integers exact, floats the same bits each run),
 * scans across the part boundaries (inclusive, exclusive from an init, into a sharded buffer), a raw
 * body striped to the devices, and bad shard lists; concurrent reduces over a sharded buffer never join
 * a dynamic batch. A job over a buffer pinned to another device is 400 device_mismatch.
 * Usage: api_devices BASE_URL */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/http_client.h"
#include "tests/unit/t.h"

#define MAX_DEV 16

static char host[256];
static int port;
static const char *const json_hdr[] = {"Content-Type: application/json", NULL};
static const char *const raw_hdr[] = {"Content-Type: application/octet-stream", NULL};

/* method path body -> parsed JSON (or NULL) and status */
static cJSON *req(const char *method, const char *path, const char *body, int *status) {
    hc_resp r;
    char err[160] = "";
    cJSON *o = NULL;
    *status = -1;
    if (hc_request(host, port, method, path, body ? json_hdr : NULL, body, body ? strlen(body) : 0, 0, &r, err,
                   sizeof err) == 0) {
        *status = r.status;
        o = cJSON_ParseWithLength(r.body, r.body_len);
        hc_resp_free(&r);
    } else {
        fprintf(stderr, "  %s %s: %s\n", method, path, err);
    }
    return o;
}

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}
static const char *err_code(const cJSON *o) { return str(cJSON_GetObjectItemCaseSensitive(o, "error"), "code"); }

static int n_dev, n_usable;
static bool usable[MAX_DEV];
static char backend[16];

static void test_info(void) {
    T_CASE("info lists the devices");
    int st;
    cJSON *o = req("GET", "/v1/info", NULL, &st);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "devices");
    CHECKF(st == 200 && cJSON_IsArray(list) && cJSON_GetArraySize(list) >= 1, "status %d", st);
    snprintf(backend, sizeof backend, "%s", str(o, "backend"));
    int i = 0;
    for (const cJSON *d = list ? list->child : NULL; d && i < MAX_DEV; d = d->next, i++) {
        CHECK(num(d, "ordinal") == i);
        CHECK(!strcmp(str(d, "backend"), backend) && str(d, "name")[0]);
        CHECK(num(d, "streams") >= 1 && num(d, "jobs_running") >= 0 && num(d, "memory_total") >= 0);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(d, "usable");
        CHECK(cJSON_IsBool(u));
        usable[i] = cJSON_IsTrue(u);
        if (!usable[i]) CHECK(str(d, "lost_reason")[0] != 0);
        n_usable += usable[i];
    }
    n_dev = i;
    printf("%d device(s) on %s, %d usable\n", n_dev, backend, n_usable);
    cJSON_Delete(o);

    T_CASE("ready while one device is usable");
    o = req("GET", "/v1/ready", NULL, &st);
    CHECKF(st == (n_usable ? 200 : 503), "ready %d with %d usable", st, n_usable);
    CHECK(!strcmp(str(o, "status"), n_usable ? "ready" : "unavailable"));
    cJSON_Delete(o);
}

/* PUT a buffer of values (JSON), pinned when dev >= 0: its id and device (or -1 with *status). */
static int put_buffer(const char *type, const char *values, int dev, char *id, size_t idn, int *status) {
    char body[4096];
    if (dev >= 0)
        snprintf(body, sizeof body, "{\"type\":\"%s\",\"data\":%s,\"device\":%d}", type, values, dev);
    else
        snprintf(body, sizeof body, "{\"type\":\"%s\",\"data\":%s}", type, values);
    cJSON *o = req("PUT", "/v1/buffers", body, status);
    int at = *status == 201 ? (int)num(o, "device") : -1;
    snprintf(id, idn, "%s", str(o, "id"));
    cJSON_Delete(o);
    return at;
}

static void delete_buffer(const char *id) {
    char path[128];
    int st;
    snprintf(path, sizeof path, "/v1/buffers/%s", id);
    cJSON_Delete(req("DELETE", path, NULL, &st));
}

static void test_pinned(void) {
    for (int d = 0; d < n_dev; d++) {
        char name[64], body[256], id[64];
        int st;
        snprintf(name, sizeof name, "device %d pinned (%s)", d, usable[d] ? "usable" : "lost");
        T_CASE(name);
        snprintf(body, sizeof body, "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1,2,3.5],\"device\":%d}", d);
        cJSON *o = req("POST", "/v1/reduce", body, &st);
        if (usable[d])
            CHECKF(st == 200 && num(o, "value") == 6.5, "status %d", st);
        else
            CHECKF(st == 503 && !strcmp(err_code(o), "device_lost"), "status %d %s", st, err_code(o));
        cJSON_Delete(o);
        snprintf(body, sizeof body,
                 "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"args\":{\"lane_mask\":1},\"input\":{\"iota\":32},"
                 "\"device\":%d}",
                 d);
        o = req("POST", "/v1/warp", body, &st);
        CHECKF(st == (usable[d] ? 200 : 503), "warp status %d", st);
        cJSON_Delete(o);
        int at = put_buffer("i64", "[\"9007199254740993\",1,2]", d, id, sizeof id, &st);
        if (!usable[d]) {
            CHECKF(st == 503, "buffer on a lost device: %d", st);
            continue;
        }
        CHECKF(st == 201 && at == d, "buffer status %d device %d", st, at);
        /* a job over it runs where it lives, and i64 sums exactly */
        snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\"}", id);
        o = req("POST", "/v1/reduce", body, &st);
        CHECKF(st == 200 && !strcmp(str(o, "value"), "9007199254740996"), "status %d value %s", st, str(o, "value"));
        cJSON_Delete(o);
        /* pinning the buffer's own device is fine; another one is 400 device_mismatch (reduce and scan) */
        snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\",\"device\":%d}", id, d);
        o = req("POST", "/v1/reduce", body, &st);
        CHECKF(st == 200 && !strcmp(str(o, "value"), "9007199254740996"), "own device pinned: %d", st);
        cJSON_Delete(o);
        for (int k = 0; k < 2; k++) {
            snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\",\"device\":%d}", id, d + 1);
            o = req("POST", k ? "/v1/scan" : "/v1/reduce", body, &st);
            CHECKF(st == 400 && !strcmp(err_code(o), "device_mismatch") &&
                       !strcmp(str(cJSON_GetObjectItemCaseSensitive(o, "error"), "field"), "device"),
                   "%s pinned to device %d, buffer on %d: %d %s", k ? "scan" : "reduce", d + 1, d, st, err_code(o));
            cJSON_Delete(o);
        }
        char path[160];
        snprintf(path, sizeof path, "/v1/buffers/%s", id);
        o = req("GET", path, NULL, &st);
        CHECK(st == 200 && num(o, "device") == d);
        cJSON_Delete(o);
        delete_buffer(id);
        /* raw body, ?device=d */
        float raw[4] = {1, 2, 3, 4};
        hc_resp r;
        char err[160];
        snprintf(path, sizeof path, "/v1/buffers?type=f32&device=%d", d);
        if (hc_request(host, port, "PUT", path, raw_hdr, raw, sizeof raw, 0, &r, err, sizeof err) == 0) {
            cJSON *b = cJSON_ParseWithLength(r.body, r.body_len);
            CHECKF(r.status == 201 && num(b, "device") == d, "raw PUT %d", r.status);
            delete_buffer(str(b, "id"));
            cJSON_Delete(b);
            hc_resp_free(&r);
        } else {
            CHECKF(0, "raw PUT: %s", err);
        }
    }
}

static void test_bad_pins(void) {
    T_CASE("unknown or malformed device");
    int st;
    char body[256];
    const char *bad[] = {"-1", "\"0\"", "1.5", "true"};
    snprintf(body, sizeof body, "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1],\"device\":%d}", n_dev);
    cJSON *o = req("POST", "/v1/reduce", body, &st);
    CHECKF(st == 400 && !strcmp(err_code(o), "bad_device"), "device %d: %d %s", n_dev, st, err_code(o));
    cJSON_Delete(o);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(body, sizeof body, "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1],\"device\":%s}", bad[i]);
        o = req("POST", "/v1/reduce", body, &st);
        CHECKF(st == 400 && !strcmp(err_code(o), "bad_device"), "device %s: %d %s", bad[i], st, err_code(o));
        cJSON_Delete(o);
    }
    snprintf(body, sizeof body,
             "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"args\":{\"lane_mask\":1},\"input\":{\"iota\":32},"
             "\"device\":%d}",
             n_dev + 3);
    o = req("POST", "/v1/warp", body, &st);
    CHECKF(st == 400 && !strcmp(err_code(o), "bad_device"), "warp: %d %s", st, err_code(o));
    cJSON_Delete(o);
    float raw[1] = {1};
    hc_resp r;
    char err[160];
    if (hc_request(host, port, "PUT", "/v1/buffers?type=f32&device=x", raw_hdr, raw, sizeof raw, 0, &r, err,
                   sizeof err) == 0) {
        o = cJSON_ParseWithLength(r.body, r.body_len);
        CHECKF(r.status == 400 && !strcmp(err_code(o), "bad_device"), "?device=x: %d", r.status);
        cJSON_Delete(o);
        hc_resp_free(&r);
    }
}

/* Unpinned: each lands on a usable device, and with several usable ones they are spread. */
static void test_least_loaded(void) {
    T_CASE("unpinned jobs go to usable devices");
    int st, seen[MAX_DEV] = {0}, distinct = 0;
    char ids[2 * MAX_DEV][64];
    int made = 0;
    for (int i = 0; i < 2 * n_dev; i++) {
        int at = put_buffer("f32", "[1,2,3]", -1, ids[made], sizeof ids[made], &st);
        if (!n_usable) {
            CHECKF(st == 503, "no usable device: %d", st);
            continue;
        }
        CHECKF(st == 201 && at >= 0 && at < n_dev && usable[at], "status %d device %d", st, at);
        if (st == 201) made++;
        if (at >= 0 && at < n_dev && !seen[at]++) distinct++;
    }
    if (n_usable > 1) CHECKF(distinct >= 2, "idle devices share the work: %d of %d used", distinct, n_usable);
    for (int i = 0; i < made; i++) delete_buffer(ids[i]);
    /* a raw body is placed when it begins, and runs there (twice round the devices) */
    float raw[4] = {1, 2, 3, 4.5f};
    for (int i = 0; i < 2 * n_dev; i++) {
        hc_resp r;
        char err[160];
        if (hc_request(host, port, "POST", "/v1/reduce?type=f32&op=sum", raw_hdr, raw, sizeof raw, 0, &r, err,
                       sizeof err) == 0) {
            cJSON *v = cJSON_ParseWithLength(r.body, r.body_len);
            CHECKF(r.status == (n_usable ? 200 : 503) && (!n_usable || num(v, "value") == 10.5), "raw reduce: %d",
                   r.status);
            cJSON_Delete(v);
            hc_resp_free(&r);
        }
    }
    cJSON *o = req("POST", "/v1/reduce", "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1,2,3]}", &st);
    CHECKF(st == (n_usable ? 200 : 503), "unpinned reduce: %d", st);
    if (!n_usable) CHECK(!strcmp(err_code(o), "no_device"));
    cJSON_Delete(o);
}

/* The same job gives the same bits on every device (deterministic reductions). */
static void test_same_bits(void) {
    T_CASE("same bits on every device");
    if (n_usable < 1) return;
    char *values = malloc(64 * 1024);
    size_t at = 0;
    at += (size_t)snprintf(values + at, 64 * 1024 - at, "[");
    unsigned x = 7;
    for (int i = 0; i < 3000; i++) {
        x = x * 1103515245u + 12345u;
        at +=
            (size_t)snprintf(values + at, 64 * 1024 - at, "%s%.6f", i ? "," : "", (double)(x >> 8) / 16777216.0 - 0.5);
    }
    snprintf(values + at, 64 * 1024 - at, "]");
    char first[64] = "";
    for (int d = 0; d < n_dev; d++) {
        if (!usable[d]) continue;
        size_t n = strlen(values) + 128;
        char *body = malloc(n);
        snprintf(body, n, "{\"type\":\"f32\",\"op\":\"sum\",\"device\":%d,\"data\":%s}", d, values);
        int st;
        cJSON *o = req("POST", "/v1/reduce", body, &st);
        char bits[64];
        snprintf(bits, sizeof bits, "%.9g", num(o, "value"));
        CHECKF(st == 200, "device %d: %d", d, st);
        if (!first[0])
            snprintf(first, sizeof first, "%s", bits);
        else
            CHECKF(!strcmp(first, bits), "device %d gave %s, device 0 %s", d, bits, first);
        cJSON_Delete(o);
        free(body);
    }
    free(values);
}

/* ---- sharded buffers ---- */

/* "[v0,v1,...]" of n i32 values v_i = (i * 7919) % 1000 - 500 (or f32 quarters when f32) */
static char *values_text(int n, bool f32) {
    char *t = malloc((size_t)n * 16 + 8);
    size_t at = 0;
    t[at++] = '[';
    for (int i = 0; i < n; i++) {
        int v = (i * 7919) % 1000 - 500;
        if (f32)
            at += (size_t)sprintf(t + at, "%s%.2f", i ? "," : "", v / 4.0);
        else
            at += (size_t)sprintf(t + at, "%s%d", i ? "," : "", v);
    }
    t[at++] = ']';
    t[at] = 0;
    return t;
}

static cJSON *put_sharded(const char *type, int n, const char *shard, int *status) {
    char *vals = values_text(n, !strcmp(type, "f32"));
    size_t len = strlen(vals) + 128;
    char *body = malloc(len);
    snprintf(body, len, "{\"type\":\"%s\",\"shard\":%s,\"data\":%s}", type, shard, vals);
    cJSON *o = req("PUT", "/v1/buffers", body, status);
    free(body);
    free(vals);
    return o;
}

/* The shards of a buffer's info: contiguous from 0, sizes differing by at most one, on usable devices. */
static void check_split(const cJSON *info, int n, int parts) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(info, "shards");
    CHECKF(cJSON_IsArray(list) && cJSON_GetArraySize(list) == parts, "%d shards listed, want %d",
           list ? cJSON_GetArraySize(list) : -1, parts);
    double at = 0, lo = 1e18, hi = -1;
    for (const cJSON *p = list ? list->child : NULL; p; p = p->next) {
        int d = (int)num(p, "device");
        CHECK(d >= 0 && d < n_dev && usable[d]);
        CHECK(num(p, "offset") == at);
        at += num(p, "count");
        if (num(p, "count") < lo) lo = num(p, "count");
        if (num(p, "count") > hi) hi = num(p, "count");
    }
    CHECKF(at == n && hi - lo <= 1, "parts cover %g of %d, sizes %g..%g", at, n, lo, hi);
}

/* Concurrent small reduces over one sharded buffer: each is right and runs alone, never in a dynamic
 * batch (a batch is one device's launch; a sharded job runs on every device of its shards), whatever
 * the daemon's --batch-window-us (devices.sh runs one with a window, where these would meet). */
typedef struct {
    const char *body;
    int status;
    double value, batch;
} shard_call;
static void *shard_call_run(void *arg) {
    shard_call *c = arg;
    cJSON *o = req("POST", "/v1/reduce", c->body, &c->status);
    c->value = num(o, "value");
    c->batch = num(cJSON_GetObjectItemCaseSensitive(o, "batch"), "size");
    cJSON_Delete(o);
    return NULL;
}
static void concurrent_sharded(const char *body, double want) {
    enum { CALLS = 8 };
    shard_call calls[CALLS];
    pthread_t th[CALLS];
    bool started[CALLS];
    for (int i = 0; i < CALLS; i++) {
        calls[i] = (shard_call){.body = body};
        started[i] = pthread_create(&th[i], NULL, shard_call_run, &calls[i]) == 0;
        if (!started[i]) shard_call_run(&calls[i]);
    }
    for (int i = 0; i < CALLS; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        CHECKF(calls[i].status == 200 && calls[i].value == want && calls[i].batch == 1,
               "concurrent reduce %d: %d value %g batch %g", i, calls[i].status, calls[i].value, calls[i].batch);
    }
}

static void test_sharded_one(int n) {
    char name[64], body[512], path[160];
    int st;
    snprintf(name, sizeof name, "sharded over %d device(s), n=%d", n_usable, n);
    T_CASE(name);
    cJSON *o = put_sharded("i32", n, "\"all\"", &st);
    CHECKF(st == 201, "PUT shard=all: %d %s", st, err_code(o));
    char id[64];
    snprintf(id, sizeof id, "%s", str(o, "id"));
    if (st == 201) check_split(o, n, n_usable);
    cJSON_Delete(o);
    if (st != 201) return;
    long long sum = 0;
    for (int i = 0; i < n; i++) sum += (i * 7919) % 1000 - 500;
    snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\"}", id);
    o = req("POST", "/v1/reduce", body, &st);
    CHECKF(st == 200 && num(o, "value") == (double)sum, "reduce: %d value %g want %lld", st, num(o, "value"), sum);
    cJSON_Delete(o);
    concurrent_sharded(body, (double)sum);
    /* scans across the boundaries: inclusive, exclusive from an init, and into a sharded buffer */
    for (int k = 0; k < 2; k++) {
        snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\"%s}", id,
                 k ? ",\"exclusive\":true,\"init\":1000" : "");
        o = req("POST", "/v1/scan", body, &st);
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
        CHECKF(st == 200 && cJSON_GetArraySize(data) == n, "scan %d: %d %s", k, st, err_code(o));
        long long acc = k ? 1000 : 0;
        int bad = 0, i = 0;
        for (const cJSON *x = data ? data->child : NULL; x; x = x->next, i++) {
            long long v = (i * 7919) % 1000 - 500;
            if (!k) acc += v;
            if (!cJSON_IsNumber(x) || x->valuedouble != (double)acc) bad++;
            if (k) acc += v;
        }
        CHECKF(bad == 0, "scan %d: %d elements wrong", k, bad);
        cJSON_Delete(o);
    }
    snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\",\"output\":\"buffer\"}", id);
    o = req("POST", "/v1/scan", body, &st);
    const char *out_id = str(cJSON_GetObjectItemCaseSensitive(o, "buffer"), "id");
    CHECKF(st == 200 && out_id[0], "scan into a buffer: %d", st);
    snprintf(path, sizeof path, "/v1/buffers/%s?data=1", out_id);
    cJSON *b = req("GET", path, NULL, &st);
    CHECK(st == 200);
    check_split(b, n, n_usable);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(b, "data");
    const cJSON *last = data ? cJSON_GetArrayItem(data, n - 1) : NULL;
    CHECKF(cJSON_IsNumber(last) && last->valuedouble == (double)sum, "the sharded scan's last element");
    delete_buffer(out_id);
    cJSON_Delete(b);
    cJSON_Delete(o);
    snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"family\":\"argmax\"}", id);
    o = req("POST", "/v1/reduce", body, &st);
    CHECKF(st == 400 && !strcmp(err_code(o), "shard_unsupported"), "argmax over shards: %d", st);
    cJSON_Delete(o);
    snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"family\":\"histogram\",\"bins\":4,\"range\":[0,1]}", id);
    o = req("POST", "/v1/reduce", body, &st);
    CHECKF(st == 400 && !strcmp(err_code(o), "shard_unsupported"), "histogram over shards: %d", st);
    cJSON_Delete(o);
    delete_buffer(id);
}

/* A buffer's raw bytes (GET with Accept: octet-stream), malloc'd into *out; its length, or -1. */
static long get_bytes(const char *id, char **out) {
    char path[128], err[160] = "";
    static const char *const accept_raw[] = {"Accept: application/octet-stream", NULL};
    snprintf(path, sizeof path, "/v1/buffers/%s", id);
    hc_resp r;
    *out = NULL;
    if (hc_request(host, port, "GET", path, accept_raw, NULL, 0, 0, &r, err, sizeof err) || r.status != 200) {
        hc_resp_free(&r); /* hc_request cleared it first: safe after a failure too */
        return -1;
    }
    long n = (long)r.body_len;
    *out = malloc(r.body_len ? r.body_len : 1);
    if (*out) memcpy(*out, r.body, r.body_len);
    hc_resp_free(&r);
    return *out ? n : -1;
}

/* "generate" with "shard": each part made on its device from where it starts in the sequence: the
 * bytes of the same generate unsharded, for every kind, with parts of unequal length. */
static void test_sharded_generate(void) {
    static const struct {
        const char *type, *gen;
    } cases[] = {{"f32", "{\"kind\":\"iota\",\"n\":1001}"},
                 {"f32", "{\"kind\":\"random\",\"n\":4099,\"seed\":7}"},
                 {"i64", "{\"kind\":\"random\",\"n\":257,\"seed\":3}"},
                 {"u32", "{\"kind\":\"constant\",\"n\":33,\"value\":9}"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[160], body[256], ids[2][64] = {"", ""};
        snprintf(name, sizeof name, "generated %s %s sharded over %d device(s): the unsharded bytes", cases[i].type,
                 cases[i].gen, n_usable);
        T_CASE(name);
        int st[2];
        for (int sharded = 0; sharded < 2; sharded++) {
            snprintf(body, sizeof body, "{\"type\":\"%s\",%s\"generate\":%s}", cases[i].type,
                     sharded ? "\"shard\":\"all\"," : "", cases[i].gen);
            cJSON *o = req("PUT", "/v1/buffers", body, &st[sharded]);
            snprintf(ids[sharded], sizeof ids[sharded], "%s", str(o, "id") ? str(o, "id") : "");
            if (sharded) check_split(o, (int)num(o, "count"), n_usable);
            cJSON_Delete(o);
        }
        CHECKF(st[0] == 201 && st[1] == 201, "PUT: %d unsharded, %d sharded", st[0], st[1]);
        char *a = NULL, *b = NULL;
        long na = ids[0][0] ? get_bytes(ids[0], &a) : -1, nb = ids[1][0] ? get_bytes(ids[1], &b) : -1;
        CHECKF(na > 0 && na == nb && !memcmp(a, b, (size_t)na), "bytes: %ld unsharded, %ld sharded%s", na, nb,
               na > 0 && na == nb ? ", different" : "");
        free(a);
        free(b);
        for (int k = 0; k < 2; k++)
            if (ids[k][0]) delete_buffer(ids[k]);
    }
}

static void test_sharded(void) {
    if (!n_usable) {
        T_CASE("shard with no usable device");
        int st;
        cJSON *o = put_sharded("i32", 4, "\"all\"", &st);
        CHECKF(st == 503, "%d", st);
        cJSON_Delete(o);
        return;
    }
    int sizes[] = {1, n_usable > 1 ? n_usable - 1 : 1, 2 * n_usable + 1, 1000, 4099};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) test_sharded_one(sizes[i]);
    test_sharded_generate();

    T_CASE("sharded f32: the same bits every time, close to the unsharded sum");
    int st;
    cJSON *o = put_sharded("f32", 5000, "\"all\"", &st);
    char id[64], body[256];
    snprintf(id, sizeof id, "%s", str(o, "id"));
    cJSON_Delete(o);
    double first = 0;
    for (int k = 0; k < 3; k++) {
        snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\",\"check\":true}", id);
        o = req("POST", "/v1/reduce", body, &st);
        double v = num(o, "value");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "check");
        CHECKF(st == 200 && num(c, "rel_error") >= 0 && num(c, "rel_error") < 1e-5, "%d rel %g", st,
               num(c, "rel_error"));
        if (!k) first = v;
        CHECKF(v == first, "run %d gave %.9g, run 0 %.9g", k, v, first);
        cJSON_Delete(o);
    }
    delete_buffer(id);

    T_CASE("raw body striped to the devices");
    enum { RAW_N = 10007 };
    float *raw = malloc(RAW_N * sizeof *raw);
    for (int i = 0; i < RAW_N; i++) raw[i] = (float)(i % 100);
    hc_resp r;
    char err[160];
    if (hc_request(host, port, "PUT", "/v1/buffers?type=f32&shard=all", raw_hdr, raw, RAW_N * sizeof *raw, 0, &r, err,
                   sizeof err) == 0) {
        o = cJSON_ParseWithLength(r.body, r.body_len);
        CHECKF(r.status == 201, "raw PUT: %d", r.status);
        check_split(o, RAW_N, n_usable);
        snprintf(id, sizeof id, "%s", str(o, "id"));
        cJSON_Delete(o);
        hc_resp_free(&r);
        char path[160];
        snprintf(path, sizeof path, "/v1/buffers/%s?data=raw", id);
        if (hc_request(host, port, "GET", path, NULL, NULL, 0, 0, &r, err, sizeof err) == 0) {
            CHECKF(r.status == 200 && r.body_len == RAW_N * sizeof *raw && !memcmp(r.body, raw, r.body_len),
                   "download: %d, %zu bytes", r.status, r.body_len);
            hc_resp_free(&r);
        }
        snprintf(body, sizeof body, "{\"buffer\":\"%s\",\"op\":\"sum\"}", id);
        o = req("POST", "/v1/reduce", body, &st);
        double want = 0;
        for (int i = 0; i < RAW_N; i++) want += raw[i];
        CHECKF(st == 200 && num(o, "value") == want, "%d: %g want %g", st, num(o, "value"), want);
        cJSON_Delete(o);
        delete_buffer(id);
    }
    free(raw);

    T_CASE("bad shard lists");
    const char *bad[] = {"\"x\"", "[]", "[0,0]", "[99]", "[0.5]", "7"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = put_sharded("i32", 4, bad[i], &st);
        CHECKF(st == 400 && !strcmp(err_code(o), "bad_shard"), "shard %s: %d %s", bad[i], st, err_code(o));
        cJSON_Delete(o);
    }
    o = req("PUT", "/v1/buffers", "{\"type\":\"i32\",\"data\":[1],\"shard\":\"all\",\"device\":0}", &st);
    CHECKF(st == 400 && !strcmp(err_code(o), "bad_shard"), "shard and device: %d", st);
    cJSON_Delete(o);
    for (int d = 0; d < n_dev; d++) {
        if (usable[d]) continue;
        char list[32];
        snprintf(list, sizeof list, "[%d]", d);
        o = put_sharded("i32", 4, list, &st);
        CHECKF(st == 503 && !strcmp(err_code(o), "device_lost"), "shard on lost device %d: %d", d, st);
        cJSON_Delete(o);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BASE_URL\n", argv[0]);
        return 2;
    }
    char prefix[64];
    if (hc_parse_url(argv[1], host, sizeof host, &port, prefix, sizeof prefix)) return 2;
    test_info();
    test_pinned();
    test_bad_pins();
    test_least_loaded();
    test_same_bits();
    test_sharded();
    return t_done("api_devices");
}
