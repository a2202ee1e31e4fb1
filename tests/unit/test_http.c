/* test_http.c — server/http/http.c over real loopback sockets: routing, 404/405, query arguments, body limits
 * (Content-Length and chunked), binary bodies, streamed bodies (stream hooks: chunks in order, refused
 * before the body, a failing sink, bodies that are not streamed, a client that goes away mid-body, the
 * handler inline or deferred), worker pool under load, 503 when the queue is full, a clean stop
 * with requests in flight (ASan checks that nothing leaks), and the event loops' busy-polling (the
 * serving thread stays awake between the requests of a connection; deferred replies and the stop still
 * wake it), and a parked request's state released where its call ends. */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "http/http.h"
#include "t.h"
#include "tests/http_client.h"

#define HOST "127.0.0.1"
#define MAX_BODY (1u << 20)
#define SLOW_MS 200
#define LOAD_SLOW 64      /* concurrent WORK requests, held in their handler */
#define LOAD_FAST 200     /* inline GETs sent meanwhile */
#define GATE_MAX_MS 60000 /* a held request lets itself go after this, should the test never open the gate */
#define GAP_MS 5          /* between the requests of the busy-poll case */

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---------- test routes ---------- */

static void h_echo_get(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "method", req->method);
    cJSON_AddStringToObject(o, "path", req->path);
    const char *q = wp_req_query(req, "q");
    if (q)
        cJSON_AddStringToObject(o, "q", q);
    else
        cJSON_AddNullToObject(o, "q");
    cJSON_AddBoolToObject(o, "t_ok", req->t_start_ns != 0 && req->t_start_ns <= wp_now_ns());
    wp_resp_json(resp, 200, o);
}

static void h_echo_post(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    if (req->body_len && (!req->body || req->body[req->body_len] != 0)) {
        wp_err e;
        WP_FAIL(&e, 500, "not_terminated", "body", "body is not NUL-terminated");
        wp_resp_error(resp, &e);
        return;
    }
    wp_resp_bytes(resp, 200, "application/octet-stream", req->body ? req->body : "", req->body_len);
}

static void h_slow(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    sleep_ms(SLOW_MS);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "slept_ms", SLOW_MS);
    wp_resp_json(resp, 200, o);
}

/* Held until the test opens the gate: how many are inside at once is known without a clock. */
static atomic_int gate_open, gate_in;

static void h_gate(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    atomic_fetch_add(&gate_in, 1);
    for (int i = 0; i < GATE_MAX_MS && !atomic_load(&gate_open); i++) sleep_ms(1);
    atomic_fetch_sub(&gate_in, 1);
    wp_resp_json(resp, 200, cJSON_CreateObject());
}

static void h_create(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", "42");
    wp_resp_json(resp, 201, o);
    snprintf(resp->location, sizeof resp->location, "/v1/jobs/42");
}

static void h_prefix(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", req->path);
    wp_resp_json(resp, 200, o);
}

static void h_err(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    wp_err e;
    WP_FAIL(&e, 0, "oops", NULL, "status left at 0");
    wp_resp_error(resp, &e);
}

static void h_ping(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    wp_resp_json(resp, 200, cJSON_CreateObject());
}

/* ---------- a route with stream hooks: the sink gathers the chunks, checking their offsets ---------- */

typedef struct {
    char *data;
    size_t got;
    uint64_t length;
    int writes;
    bool fail;
} test_sink;

static atomic_int sinks_opened, sinks_closed, stream_handler_calls;

static void *s_open(void *app, const wp_req *req, uint64_t length, wp_resp *resp) {
    (void)app;
    const char *mode = wp_req_query(req, "mode");
    if (mode && !strcmp(mode, "refuse")) {
        wp_err e;
        WP_FAIL(&e, 400, "refused", "body", "refused before the body");
        wp_resp_error(resp, &e);
        return NULL;
    }
    if (mode && !strcmp(mode, "gather")) return NULL; /* resp->status 0: read into memory */
    test_sink *s = calloc(1, sizeof *s);
    s->data = malloc(length);
    s->length = length;
    s->fail = mode && !strcmp(mode, "fail");
    atomic_fetch_add(&sinks_opened, 1);
    return s;
}

static int s_write(void *sink, const void *data, size_t len, uint64_t offset, wp_err *err) {
    test_sink *s = sink;
    if (offset != s->got || s->got + len > s->length)
        return WP_FAIL(err, 500, "bad_chunk", "body", "chunk of %zu at %llu after %zu", len, (unsigned long long)offset,
                       s->got);
    if (s->fail && s->got + len > s->length / 2) return WP_FAIL(err, 507, "sink_full", "body", "the sink is full");
    memcpy(s->data + s->got, data, len);
    s->got += len;
    s->writes++;
    return 0;
}

static void s_close(void *sink) {
    test_sink *s = sink;
    free(s->data);
    free(s);
    atomic_fetch_add(&sinks_closed, 1);
}

static const wp_stream_hooks test_hooks = {s_open, s_write, s_close};

/* Echoes the body: "streamed" (and the write count in X-Writes) or "gathered". TRY_INLINE: defers
 * bodies over 1000 bytes, as /v1/reduce does. */
static void h_stream(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    if (req->may_defer && req->body_len > 1000) {
        resp->defer = true;
        return;
    }
    atomic_fetch_add(&stream_handler_calls, 1);
    test_sink *s = req->sink;
    if (s) {
        bool ok = !req->body && req->body_len == s->got && s->got == s->length;
        wp_resp_bytes(resp, ok ? 200 : 500, "application/x-streamed", s->data, s->got);
        snprintf(resp->location, sizeof resp->location, "/writes/%d", s->writes);
    } else {
        wp_resp_bytes(resp, 200, "application/x-gathered", req->body ? req->body : "", req->body_len);
    }
}

/* /park: parked on the HTTP thread (wp_req_park), answered by a thread of its own (a body "1": once the
 * gate opens); its state is given back by wp_req_on_end's release, which counts where it ran. A body
 * "2": the state lives in the call's room (wp_req_room), whose bytes must last until the release. */
static atomic_int parks, park_gate, released, released_on_http, park_answered, room_intact;
#define PARK_ROOM_MAGIC 0x5eed5eedu
typedef struct {
    const wp_req *req;
    wp_resp *resp;
    pthread_t http_thread;
    bool gated, in_room;
    unsigned magic;
    unsigned char fill[512]; /* the room's bytes past the header: written, then read back at the release */
} park_state;

static void park_release(void *ctx) {
    park_state *st = ctx;
    if (pthread_equal(pthread_self(), st->http_thread)) atomic_fetch_add(&released_on_http, 1);
    atomic_fetch_add(&released, 1);
    if (!st->in_room) {
        free(st);
        return;
    }
    bool intact = st->magic == PARK_ROOM_MAGIC;
    for (size_t i = 0; i < sizeof st->fill; i++) intact &= st->fill[i] == (unsigned char)i;
    if (intact) atomic_fetch_add(&room_intact, 1);
}

static void *park_thread(void *arg) {
    park_state *st = arg;
    for (int i = 0; st->gated && !atomic_load(&park_gate) && i < GATE_MAX_MS; i++) sleep_ms(1);
    wp_resp_bytes(st->resp, 200, "text/plain", "parked", 6);
    atomic_fetch_add(&park_answered, 1);
    wp_req_unpark(st->req); /* st is the HTTP thread's (or, the client gone, released here) */
    return NULL;
}

static void h_park(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    const bool in_room = req->body && req->body[0] == '2';
    park_state *st = in_room ? wp_req_room(req, sizeof *st) : calloc(1, sizeof *st);
    if (!st) {
        wp_resp_bytes(resp, 500, "text/plain", "no memory", 9);
        return;
    }
    *st = (park_state){.req = req,
                       .resp = resp,
                       .http_thread = pthread_self(),
                       .gated = req->body && req->body[0] == '1',
                       .in_room = in_room,
                       .magic = PARK_ROOM_MAGIC};
    for (size_t i = 0; i < sizeof st->fill; i++) st->fill[i] = (unsigned char)i;
    pthread_t th;
    if (!req->may_defer || !wp_req_park(req, NULL, st)) {
        if (!in_room) free(st);
        wp_resp_bytes(resp, 500, "text/plain", "not parked", 10);
        return;
    }
    wp_req_on_end(req, park_release, st);
    atomic_fetch_add(&parks, 1);
    pthread_create(&th, NULL, park_thread, st);
    pthread_detach(th);
}

/* /room: an inline route's request may not park, so it has no room. */
static void h_room(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    const bool none = wp_req_room(req, 64) == NULL;
    wp_resp_bytes(resp, 200, "text/plain", none ? "none" : "room", 4);
}

static const wp_route routes[] = {
    {"GET", "/echo", h_echo_get, WP_ROUTE_INLINE, NULL},
    {"POST", "/echo", h_echo_post, WP_ROUTE_INLINE, NULL},
    {"POST", "/slow", h_slow, WP_ROUTE_WORK, NULL},
    {"POST", "/gate", h_gate, WP_ROUTE_WORK, NULL},
    {"POST", "/create", h_create, WP_ROUTE_WORK, NULL},
    {"GET", "/pfx/", h_prefix, WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/pfx/", h_prefix, WP_ROUTE_PREFIX | WP_ROUTE_WORK, NULL},
    {"GET", "/err", h_err, WP_ROUTE_INLINE, NULL},
    {"GET", "/ping", h_ping, WP_ROUTE_INLINE, NULL},
    {"POST", "/stream", h_stream, WP_ROUTE_INLINE, &test_hooks},
    {"POST", "/stream-work", h_stream, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, &test_hooks},
    {"POST", "/park", h_park, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, NULL},
    {"GET", "/room", h_room, WP_ROUTE_INLINE, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

static wp_http *start(int workers, int max_queue) {
    wp_http_config cfg = {
        .host = HOST, .port = 0, .threads = 4, .workers = workers, .max_body = MAX_BODY, .max_queue = max_queue};
    wp_err err = {0};
    wp_http *h = wp_http_start(&cfg, routes, NULL, &err);
    CHECKF(h != NULL, "%s", err.msg);
    CHECK(h == NULL || wp_http_port(h) > 0);
    return h;
}

/* ---------- helpers ---------- */

static int port_of;

static int req(const char *method, const char *path, const char *const *headers, const void *body, size_t n,
               unsigned flags, hc_resp *r) {
    char err[160] = "";
    int rc = hc_request(HOST, port_of, method, path, headers, body, n, flags, r, err, sizeof err);
    if (rc < 0) fprintf(stderr, "  request %s %s: %s\n", method, path, err);
    return rc;
}

static cJSON *json_of(const hc_resp *r) { return cJSON_ParseWithLength(r->body, r->body_len); }

static const char *jstr(const cJSON *o, const char *a, const char *b) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool has_error(const hc_resp *r, int status, const char *code) {
    cJSON *o = json_of(r);
    const char *got = jstr(o, "error", "code");
    bool ok = r->status == status && got && !strcmp(got, code) && jstr(o, "error", "message");
    cJSON_Delete(o);
    return ok;
}

typedef struct {
    const char *path;
    int status;
    char code[32];
    double ms;
} call_result;

static atomic_int slow_sent; /* slow_thread requests fully sent */

static void *slow_thread(void *arg) {
    call_result *res = arg;
    hc_resp r = {0};
    hc_conn c;
    uint64_t t0 = wp_now_ns();
    res->status = -1;
    if (hc_open(&c, HOST, port_of, 0) == 0 && hc_send(&c, "POST", res->path, NULL, "{}", 2, 0) == 0) {
        atomic_fetch_add(&slow_sent, 1);
        if (hc_recv(&c, "POST", &r) == 0) res->status = r.status;
    }
    if (res->status < 0) fprintf(stderr, "  slow request: %s\n", c.err);
    hc_close(&c);
    res->ms = wp_ms_since(t0);
    cJSON *o = json_of(&r);
    const char *code = jstr(o, "error", "code");
    snprintf(res->code, sizeof res->code, "%s", code ? code : "");
    cJSON_Delete(o);
    hc_resp_free(&r);
    return NULL;
}

static void wait_stats(wp_http *h, int busy, int queued) {
    wp_http_stats s;
    for (int i = 0; i < 30000; i++) { /* returns as soon as it holds; 30 s only on a stuck server */
        wp_http_stats_get(h, &s);
        if (s.workers_busy >= busy && s.queue_depth >= queued) return;
        sleep_ms(1);
    }
    CHECKF(0, "stats never reached busy %d queued %d (have %d, %d)", busy, queued, s.workers_busy, s.queue_depth);
}

/* ---------- cases ---------- */

static void test_routing(void) {
    hc_resp r;
    char v[128];
    T_CASE("GET inline + query");
    if (req("GET", "/echo?q=hello%20world&z=1", NULL, NULL, 0, 0, &r) == 0) {
        cJSON *o = json_of(&r);
        CHECK(r.status == 200);
        CHECK(jstr(o, "q", NULL) && !strcmp(jstr(o, "q", NULL), "hello world"));
        CHECK(jstr(o, "path", NULL) && !strcmp(jstr(o, "path", NULL), "/echo"));
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(o, "t_ok")));
        CHECK(hc_header(&r, "Content-Type", v, sizeof v) && !strcmp(v, "application/json"));
        CHECK(hc_header(&r, "Cache-Control", v, sizeof v) && !strcmp(v, "no-store"));
        cJSON_Delete(o);
    } else
        CHECK(0);
    hc_resp_free(&r);

    T_CASE("missing query arg");
    if (req("GET", "/echo", NULL, NULL, 0, 0, &r) == 0) {
        cJSON *o = json_of(&r);
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "q")));
        cJSON_Delete(o);
    } else
        CHECK(0);
    hc_resp_free(&r);

    T_CASE("HEAD on a GET route");
    CHECK(req("HEAD", "/echo", NULL, NULL, 0, 0, &r) == 0 && r.status == 200 && r.body_len == 0);
    hc_resp_free(&r);

    T_CASE("prefix route");
    if (req("GET", "/pfx/a/b", NULL, NULL, 0, 0, &r) == 0) {
        cJSON *o = json_of(&r);
        CHECK(r.status == 200 && jstr(o, "path", NULL) && !strcmp(jstr(o, "path", NULL), "/pfx/a/b"));
        cJSON_Delete(o);
    } else
        CHECK(0);
    hc_resp_free(&r);
    CHECK(req("DELETE", "/pfx/7", NULL, NULL, 0, 0, &r) == 0 && r.status == 200);
    hc_resp_free(&r);

    T_CASE("404");
    CHECK(req("GET", "/nope", NULL, NULL, 0, 0, &r) == 0 && has_error(&r, 404, "not_found"));
    hc_resp_free(&r);
    CHECK(req("GET", "/pfx", NULL, NULL, 0, 0, &r) == 0 && has_error(&r, 404, "not_found"));
    hc_resp_free(&r);

    T_CASE("405 + Allow");
    if (req("DELETE", "/echo", NULL, NULL, 0, 0, &r) == 0) {
        CHECK(has_error(&r, 405, "method_not_allowed"));
        CHECKF(hc_header(&r, "Allow", v, sizeof v) && !strcmp(v, "GET, HEAD, POST"), "Allow: %s", v);
    } else
        CHECK(0);
    hc_resp_free(&r);
    CHECK(req("PUT", "/slow", NULL, "x", 1, 0, &r) == 0 && has_error(&r, 405, "method_not_allowed"));
    CHECK(hc_header(&r, "Allow", v, sizeof v) && !strcmp(v, "POST"));
    hc_resp_free(&r);

    T_CASE("WORK route: 201 + Location");
    if (req("POST", "/create", NULL, "{}", 2, 0, &r) == 0) {
        CHECK(r.status == 201);
        CHECK(hc_header(&r, "Location", v, sizeof v) && !strcmp(v, "/v1/jobs/42"));
    } else
        CHECK(0);
    hc_resp_free(&r);

    T_CASE("error with status 0 → 500, no field");
    if (req("GET", "/err", NULL, NULL, 0, 0, &r) == 0) {
        cJSON *o = json_of(&r);
        CHECK(has_error(&r, 500, "oops"));
        CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "field"));
        cJSON_Delete(o);
    } else
        CHECK(0);
    hc_resp_free(&r);

    T_CASE("keep-alive: two requests, one connection");
    hc_conn c;
    if (hc_open(&c, HOST, port_of, 0) == 0) {
        for (int i = 0; i < 2; i++) {
            CHECK(hc_send(&c, "POST", "/create", NULL, "{}", 2, 0) == 0);
            CHECK(hc_recv(&c, "POST", &r) == 0 && r.status == 201 && !r.closed);
            hc_resp_free(&r);
        }
    } else
        CHECK(0);
    hc_close(&c);
}

static void test_bodies(void) {
    hc_resp r;
    T_CASE("empty body");
    CHECK(req("POST", "/echo", NULL, NULL, 0, 0, &r) == 0 && r.status == 200 && r.body_len == 0);
    hc_resp_free(&r);

    T_CASE("binary body with NULs");
    char bin[256];
    for (int i = 0; i < 256; i++) bin[i] = (char)i;
    const char *bin_headers[] = {"Content-Type: application/octet-stream", NULL};
    CHECK(req("POST", "/echo", bin_headers, bin, sizeof bin, 0, &r) == 0 && r.status == 200 &&
          r.body_len == sizeof bin && memcmp(r.body, bin, sizeof bin) == 0);
    hc_resp_free(&r);
    char v[64];

    char *big = malloc(2 * MAX_BODY);
    for (size_t i = 0; i < 2 * MAX_BODY; i++) big[i] = (char)('a' + i % 26);
    T_CASE("body of exactly max_body");
    CHECK(req("POST", "/echo", NULL, big, MAX_BODY, 0, &r) == 0 && r.status == 200 && r.body_len == MAX_BODY &&
          memcmp(r.body, big, MAX_BODY) == 0);
    CHECK(hc_header(&r, "Cache-Control", v, sizeof v) == NULL); /* not JSON */
    hc_resp_free(&r);
    T_CASE("chunked body under the limit");
    CHECK(req("POST", "/echo", NULL, big, MAX_BODY / 2 + 7, HC_CHUNKED, &r) == 0 && r.status == 200 &&
          r.body_len == MAX_BODY / 2 + 7 && memcmp(r.body, big, r.body_len) == 0);
    hc_resp_free(&r);

    T_CASE("413: oversize Content-Length, no body sent");
    const char *huge_len[] = {"Content-Type: application/json", "Content-Length: 1000000000000", NULL};
    if (req("POST", "/echo", huge_len, NULL, 0, 0, &r) == 0) {
        CHECK(has_error(&r, 413, "body_too_large"));
        cJSON *o = json_of(&r);
        CHECK(jstr(o, "error", "field") && !strcmp(jstr(o, "error", "field"), "body"));
        cJSON_Delete(o);
    } else
        CHECK(0);
    hc_resp_free(&r);
    T_CASE("413: oversize Content-Length with Expect: 100-continue, answered before the body");
    char over[64];
    snprintf(over, sizeof over, "Content-Length: %u", MAX_BODY + 1);
    const char *expect_len[] = {"Content-Type: application/json", over, "Expect: 100-continue", NULL};
    CHECK(req("POST", "/echo", expect_len, NULL, 0, 0, &r) == 0 && has_error(&r, 413, "body_too_large"));
    hc_resp_free(&r);
    T_CASE("413: oversize Content-Length with the body");
    CHECK(req("POST", "/slow", NULL, big, MAX_BODY + 1, 0, &r) == 0 && has_error(&r, 413, "body_too_large"));
    hc_resp_free(&r);
    T_CASE("413: chunked body past the limit");
    CHECK(req("POST", "/echo", NULL, big, MAX_BODY + MAX_BODY / 2, HC_CHUNKED, &r) == 0 &&
          has_error(&r, 413, "body_too_large"));
    hc_resp_free(&r);
    free(big);
}

/* Waits (up to 30 s, returning as soon as it holds) until every sink opened has been closed. */
static bool sinks_settle(void) {
    for (int i = 0; i < 30000; i++) {
        if (atomic_load(&sinks_opened) == atomic_load(&sinks_closed)) return true;
        sleep_ms(1);
    }
    return false;
}

static bool got_type(const hc_resp *r, const char *type) {
    char v[64];
    return hc_header(r, "Content-Type", v, sizeof v) && !strcmp(v, type);
}

static void test_streams(wp_http *h) {
    hc_resp r;
    char v[64];
    const char *raw[] = {"Content-Type: application/octet-stream", NULL};
    const char *json[] = {"Content-Type: application/json", NULL};
    size_t n = 700000; /* under MAX_BODY, many reads */
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = (char)(i * 7 + i / 251);
    wp_http_stats s0, s1;
    wp_http_stats_get(h, &s0);
    int opened = atomic_load(&sinks_opened);

    T_CASE("a raw body is streamed, in order, in several chunks");
    CHECK(req("POST", "/stream", raw, big, n, 0, &r) == 0 && r.status == 200 &&
          got_type(&r, "application/x-streamed") && r.body_len == n && !memcmp(r.body, big, n));
    int writes = hc_header(&r, "Location", v, sizeof v) ? atoi(v + 8) : 0;
    CHECKF(writes > 1, "%d writes", writes);
    hc_resp_free(&r);
    CHECK(sinks_settle() && atomic_load(&sinks_opened) == opened + 1);
    wp_http_stats_get(h, &s1);
    CHECK(s1.streamed == s0.streamed + 1 && s1.streamed_bytes == s0.streamed_bytes + n);

    T_CASE("not streamed: JSON, chunked, empty, or the hook declines");
    CHECK(req("POST", "/stream", json, big, 5000, 0, &r) == 0 && got_type(&r, "application/x-gathered") &&
          r.body_len == 5000 && !memcmp(r.body, big, 5000));
    hc_resp_free(&r);
    CHECK(req("POST", "/stream", raw, big, 9000, HC_CHUNKED, &r) == 0 && got_type(&r, "application/x-gathered") &&
          r.body_len == 9000 && !memcmp(r.body, big, 9000));
    hc_resp_free(&r);
    CHECK(req("POST", "/stream", raw, NULL, 0, 0, &r) == 0 && got_type(&r, "application/x-gathered") &&
          r.body_len == 0);
    hc_resp_free(&r);
    CHECK(req("POST", "/stream?mode=gather", raw, big, 3000, 0, &r) == 0 && got_type(&r, "application/x-gathered") &&
          r.body_len == 3000);
    hc_resp_free(&r);
    CHECK(atomic_load(&sinks_opened) == opened + 1);

    T_CASE("refused when the headers arrive, before the body");
    int calls = atomic_load(&stream_handler_calls);
    CHECK(req("POST", "/stream?mode=refuse", raw, big, n, 0, &r) == 0 && has_error(&r, 400, "refused"));
    hc_resp_free(&r);
    CHECK(atomic_load(&stream_handler_calls) == calls && atomic_load(&sinks_opened) == opened + 1);

    T_CASE("a sink that fails mid-body: its error, the handler never runs");
    CHECK(req("POST", "/stream?mode=fail", raw, big, n, 0, &r) == 0 && has_error(&r, 507, "sink_full"));
    hc_resp_free(&r);
    CHECK(atomic_load(&stream_handler_calls) == calls);
    CHECK(sinks_settle() && atomic_load(&sinks_opened) == opened + 2);
    CHECK(req("GET", "/ping", NULL, NULL, 0, 0, &r) == 0 && r.status == 200); /* the server goes on */
    hc_resp_free(&r);

    T_CASE("the client goes away mid-body: the sink is closed at once (not at the connection timeout)");
    for (int round = 0; round < 10; round++) { /* its FIN often comes with its last bytes: 10 tries */
        hc_conn c;
        int before = atomic_load(&sinks_opened);
        if (hc_open(&c, HOST, port_of, 0) == 0) {
            const char *head = "POST /stream HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n"
                               "Content-Length: 100000\r\n\r\n";
            CHECK(hc_write(&c, head, strlen(head), false) == 0 && hc_write(&c, big, 30000, false) == 0);
            for (int i = 0; i < 30000 && atomic_load(&sinks_opened) == before; i++) sleep_ms(1);
            hc_close(&c);
        }
        CHECKF(sinks_settle() && atomic_load(&sinks_opened) == before + 1, "round %d: opened %d, closed %d", round,
               atomic_load(&sinks_opened), atomic_load(&sinks_closed));
    }
    T_CASE("the client goes away mid-body (gathered): the server goes on");
    hc_conn c;
    if (hc_open(&c, HOST, port_of, 0) == 0) {
        const char *head = "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                           "application/json\r\nContent-Length: 100000\r\n\r\n";
        CHECK(hc_write(&c, head, strlen(head), false) == 0 && hc_write(&c, big, 30000, false) == 0);
        hc_close(&c);
    }
    CHECK(req("GET", "/ping", NULL, NULL, 0, 0, &r) == 0 && r.status == 200);
    hc_resp_free(&r);

    T_CASE("TRY_INLINE with a sink: small answered inline, large deferred; the sink survives the first call");
    wp_http_stats_get(h, &s0);
    CHECK(req("POST", "/stream-work", raw, big, 800, 0, &r) == 0 && r.status == 200 &&
          got_type(&r, "application/x-streamed") && r.body_len == 800 && !memcmp(r.body, big, 800));
    hc_resp_free(&r);
    CHECK(req("POST", "/stream-work", raw, big, n, 0, &r) == 0 && r.status == 200 &&
          got_type(&r, "application/x-streamed") && r.body_len == n && !memcmp(r.body, big, n));
    hc_resp_free(&r);
    wp_http_stats_get(h, &s1);
    CHECK(s1.answered_inline == s0.answered_inline + 1 && s1.deferred == s0.deferred + 1);
    CHECK(sinks_settle());
    free(big);
}

/* 64 WORK requests held inside their handler until the test opens the gate, and 200 inline GETs sent
 * meanwhile. Order and overlap only, no clock: all 64 run at once on the worker pool, and every GET is
 * answered while all 64 are still running. (The GETs' latency under this load: bench/http/bench_http_inline.c.) */
static void test_load(wp_http *h) {
    T_CASE("64 WORK requests held + 200 inline GETs meanwhile");
    pthread_t th[LOAD_SLOW];
    call_result res[LOAD_SLOW];
    atomic_store(&gate_open, 0);
    for (int i = 0; i < LOAD_SLOW; i++) {
        res[i] = (call_result){.path = "/gate"};
        pthread_create(&th[i], NULL, slow_thread, &res[i]);
    }
    for (int i = 0; i < GATE_MAX_MS / 2 && atomic_load(&gate_in) < LOAD_SLOW; i++) sleep_ms(1);
    CHECKF(atomic_load(&gate_in) == LOAD_SLOW, "only %d of %d WORK requests ran at once", atomic_load(&gate_in),
           LOAD_SLOW);
    int fast_ok = 0;
    for (int i = 0; i < LOAD_FAST; i++) {
        hc_resp r;
        if (req("GET", "/ping", NULL, NULL, 0, 0, &r) == 0 && r.status == 200) fast_ok++;
        hc_resp_free(&r);
    }
    wp_http_stats s;
    wp_http_stats_get(h, &s);
    CHECKF(fast_ok == LOAD_FAST, "%d of %d GETs answered", fast_ok, LOAD_FAST);
    CHECKF(atomic_load(&gate_in) == LOAD_SLOW && s.workers_busy == LOAD_SLOW,
           "the GETs were not all answered while the WORK requests ran (%d held, %d workers busy)",
           atomic_load(&gate_in), s.workers_busy);
    atomic_store(&gate_open, 1);
    for (int i = 0; i < LOAD_SLOW; i++) pthread_join(th[i], NULL);
    int slow_ok = 0;
    for (int i = 0; i < LOAD_SLOW; i++) slow_ok += res[i].status == 200;
    CHECK(slow_ok == LOAD_SLOW);
}

static void test_busy(void) {
    T_CASE("503 busy when the queue is full");
    wp_http *h = start(1, 2);
    if (!h) return;
    port_of = wp_http_port(h);
    pthread_t th[3];
    call_result res[3];
    for (int i = 0; i < 3; i++) {
        res[i] = (call_result){.path = "/slow"};
        pthread_create(&th[i], NULL, slow_thread, &res[i]);
        wait_stats(h, 1, i); /* one running, then one and two waiting */
    }
    hc_resp r;
    char v[16];
    if (req("POST", "/slow", NULL, "{}", 2, 0, &r) == 0) {
        CHECK(has_error(&r, 503, "busy"));
        CHECK(hc_header(&r, "Retry-After", v, sizeof v) && !strcmp(v, "1"));
    } else
        CHECK(0);
    hc_resp_free(&r);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) CHECKF(res[i].status == 200, "request %d: %d", i, res[i].status);
    wp_http_stats s;
    wp_http_stats_get(h, &s);
    CHECK(s.rejected_busy == 1 && s.responses_5xx == 1 && s.responses_2xx == 3 && s.requests == 4);
    CHECK(s.queue_depth == 0 && s.workers_busy == 0);
    wp_http_stop(h);
}

static void test_stop_in_flight(void) {
    T_CASE("stop with requests running and queued");
    wp_http *h = start(2, 8);
    if (!h) return;
    port_of = wp_http_port(h);
    enum { N = 6 };
    pthread_t th[N];
    call_result res[N];
    for (int i = 0; i < N; i++) {
        res[i] = (call_result){.path = "/slow"};
        pthread_create(&th[i], NULL, slow_thread, &res[i]);
    }
    wait_stats(h, 2, N - 2);
    hc_conn idle, uploading; /* an idle keep-alive connection and one stuck halfway through its body */
    CHECK(hc_open(&idle, HOST, port_of, 0) == 0);
    CHECK(hc_open(&uploading, HOST, port_of, 0) == 0);
    const char *len_headers[] = {"Content-Length: 1000", NULL};
    CHECK(hc_send(&uploading, "POST", "/slow", len_headers, "{\"half\":", 8, 0) == 0);
    sleep_ms(20);
    wp_http_stop(h); /* how long it takes: bench/http/bench_http_inline.c */
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    int done = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        if (res[i].status == 200)
            done++;
        else if (res[i].status == 503 && !strcmp(res[i].code, "shutting_down"))
            refused++;
        else
            CHECKF(0, "request %d ended with %d %s", i, res[i].status, res[i].code);
    }
    CHECKF(done == 2 && refused == N - 2, "done %d, refused %d", done, refused);
    hc_resp r0;
    CHECK(hc_recv(&idle, "GET", &r0) < 0 && hc_recv(&uploading, "POST", &r0) < 0); /* closed, no reply */
    hc_close(&idle);
    hc_close(&uploading);
    hc_resp r;
    char err[160];
    CHECK(hc_request(HOST, port_of, "GET", "/ping", NULL, NULL, 0, 0, &r, err, sizeof err) < 0);
    hc_resp_free(&r);
}

static bool wait_count(atomic_int *v, int want) {
    for (int i = 0; i < 3000 && atomic_load(v) < want; i++) sleep_ms(1);
    return atomic_load(v) == want;
}

/* A parked request's release (wp_req_on_end): once, on its HTTP thread after the answer; on the thread
 * that ran it when the client went meanwhile. */
static void test_park_release(void) {
    T_CASE("a parked request's state released where its call ends");
    wp_http *h = start(2, 8);
    if (!h) return;
    port_of = wp_http_port(h);
    hc_resp r;
    CHECK(req("POST", "/park", NULL, "0", 1, 0, &r) == 0 && r.status == 200 && r.body_len == 6 &&
          !memcmp(r.body, "parked", 6));
    hc_resp_free(&r);
    CHECKF(wait_count(&released, 1) && atomic_load(&released_on_http) == 1,
           "released %d, on the HTTP thread %d: want 1, 1", atomic_load(&released), atomic_load(&released_on_http));
    hc_conn gone;
    const char *len_headers[] = {"Content-Length: 1", NULL};
    if (hc_open(&gone, HOST, port_of, 0) != 0) {
        CHECKF(0, "cannot connect to port %d", port_of);
        wp_http_stop(h);
        return;
    }
    CHECK(hc_send(&gone, "POST", "/park", len_headers, "1", 1, 0) == 0);
    CHECK(wait_count(&parks, 2));                        /* parked, its thread at the gate */
    struct linger reset = {.l_onoff = 1, .l_linger = 0}; /* close with a reset: seen at once while parked */
    setsockopt(gone.fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    hc_close(&gone);
    for (int i = 0; i < 3000 && wp_http_active(h) > 0; i++) sleep_ms(1);
    CHECKF(wp_http_active(h) == 0, "%d requests still active after the client's reset", wp_http_active(h));
    atomic_store(&park_gate, 1);
    CHECKF(wait_count(&park_answered, 2) && wait_count(&released, 2) && atomic_load(&released_on_http) == 1,
           "answered %d, released %d, on the HTTP thread %d: want 2, 2, 1", atomic_load(&park_answered),
           atomic_load(&released), atomic_load(&released_on_http));
    wp_http_stop(h);
}

/* A parked request's state in its call's room (wp_req_room): intact until its release, request after
 * request on one connection; none for a request that cannot park. */
static void test_park_room(void) {
    T_CASE("a parked request's state in its call's room, intact until the call ends");
    wp_http *h = start(2, 8);
    if (!h) return;
    port_of = wp_http_port(h);
    const int r0 = atomic_load(&released);
    hc_conn c;
    if (hc_open(&c, HOST, port_of, 0) != 0) {
        CHECKF(0, "cannot connect to port %d", port_of);
        wp_http_stop(h);
        return;
    }
    for (int i = 0; i < 5; i++) {
        hc_resp r;
        const char *len_headers[] = {"Content-Length: 1", NULL};
        CHECK(hc_send(&c, "POST", "/park", len_headers, "2", 1, 0) == 0 && hc_recv(&c, "POST", &r) == 0 &&
              r.status == 200 && r.body_len == 6);
        hc_resp_free(&r);
    }
    hc_close(&c);
    CHECKF(wait_count(&released, r0 + 5) && atomic_load(&room_intact) == 5, "released %d, intact %d: want %d, 5",
           atomic_load(&released) - r0, atomic_load(&room_intact), 5);
    hc_resp r;
    CHECK(req("GET", "/room", NULL, NULL, 0, 0, &r) == 0 && r.status == 200 && r.body_len == 4 &&
          !memcmp(r.body, "none", 4));
    hc_resp_free(&r);
    wp_http_stop(h);
}

static void test_bad_start(void) {
    T_CASE("start errors");
    wp_http_config cfg = {.host = "256.1.1.1", .port = 0, .threads = 1, .workers = 1, .max_body = 1, .max_queue = 1};
    wp_err err = {0};
    CHECK(wp_http_start(&cfg, routes, NULL, &err) == NULL && err.status != 0);
    wp_http *h = start(1, 1);
    if (!h) return;
    cfg.host = HOST;
    cfg.port = wp_http_port(h);
    wp_err_clear(&err);
    CHECK(wp_http_start(&cfg, routes, NULL, &err) == NULL && !strcmp(err.code, "listen_failed"));
    printf("port in use: %s\n", err.msg);
    /* h's 4 threads listen on SO_REUSEPORT sockets: a second server of 4 (which would set it too) and
     * one on libmicrohttpd's pool are refused all the same */
    cfg.threads = 4;
    wp_err_clear(&err);
    CHECKF(wp_http_start(&cfg, routes, NULL, &err) == NULL && !strcmp(err.code, "listen_failed"),
           "a second server of 4 threads on a taken port: %s", err.msg);
    cfg.pool = true;
    wp_err_clear(&err);
    CHECK(wp_http_start(&cfg, routes, NULL, &err) == NULL && !strcmp(err.code, "listen_failed"));
    cfg.threads = 1, cfg.pool = false;
    wp_http_stop(h);
    /* once it is gone, the port is free again, and a pool of 4 serves on it */
    cfg.threads = 4, cfg.pool = true;
    wp_err_clear(&err);
    h = wp_http_start(&cfg, routes, NULL, &err);
    CHECKF(h != NULL, "a pool of 4 on the freed port: %s", err.msg);
    if (h) {
        hc_resp r;
        char e[160];
        CHECK(hc_request(HOST, cfg.port, "GET", "/ping", NULL, NULL, 0, 0, &r, e, sizeof e) == 0 && r.status == 200);
        hc_resp_free(&r);
        wp_http_stop(h);
    }
    cfg.threads = 1, cfg.pool = false;
    cfg.host = "::1";
    cfg.port = 0;
    h = wp_http_start(&cfg, routes, NULL, &err);
    if (h) { /* IPv6 loopback may be absent in a container */
        hc_resp r;
        char e[160];
        CHECK(hc_request("::1", wp_http_port(h), "GET", "/ping", NULL, NULL, 0, 0, &r, e, sizeof e) == 0 &&
              r.status == 200);
        hc_resp_free(&r);
        wp_http_stop(h);
    }
}

/* Threads of this process named `name` (/proc/self/task/N/comm): how many, and into *sleeps (unless
 * NULL) the sum of their voluntary context switches (times they slept). */
static int threads_sleeps(const char *name, long *sleeps) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (sleeps) *sleeps = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[300], line[128] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(line, sizeof line, f)) line[strcspn(line, "\n")] = 0;
        if (f) fclose(f);
        if (strcmp(line, name)) continue;
        n++;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        if (sleeps && (f = fopen(path, "r"))) {
            while (fgets(line, sizeof line, f))
                if (!strncmp(line, "voluntary_ctxt_switches:", 24)) *sleeps += atol(line + 24);
            fclose(f);
        }
    }
    if (d) closedir(d);
    return n;
}

static int threads_named(const char *name) { return threads_sleeps(name, NULL); }

static long sleeps_of(const char *name) {
    long n;
    threads_sleeps(name, &n);
    return n;
}

/* One HTTP thread on its own event loop, busy-polling busy_us after each event: how often it slept
 * while one connection sent `n` requests, each GAP_MS after the last reply (after a first one that woke
 * it; the gap gives a thread that does not poll time to reach its epoll_wait first), and
 * whether a deferred request (its reply comes from a worker, through a resume) is answered then. */
static long sleeps_between_requests(int busy_us, int n, bool hold_worker) {
    wp_http_config cfg = {
        .host = HOST, .threads = 1, .workers = 2, .max_body = MAX_BODY, .max_queue = 4, .busy_poll_us = busy_us};
    wp_err err = {0};
    wp_http *h = wp_http_start(&cfg, routes, NULL, &err);
    CHECKF(h != NULL, "%s", err.msg);
    if (!h) return -1;
    CHECK(threads_named("wp-http") == 1);
    port_of = wp_http_port(h);
    pthread_t held;
    call_result held_res = {.path = "/gate"};
    if (hold_worker) { /* a worker busy the whole time: the loop must not take a CPU by polling */
        atomic_store(&gate_open, 0);
        pthread_create(&held, NULL, slow_thread, &held_res);
        wait_stats(h, 1, 0);
    }
    hc_conn c;
    hc_resp r = {0};
    long before = -1, after = -1;
    int ok = 0;
    if (hc_open(&c, HOST, wp_http_port(h), 0) == 0) {
        for (int i = 0; i <= n; i++) {
            if (i == 1) before = sleeps_of("wp-http");
            ok += hc_send(&c, "GET", "/ping", NULL, NULL, 0, 0) == 0 && hc_recv(&c, "GET", &r) == 0 && r.status == 200;
            hc_resp_free(&r);
            sleep_ms(GAP_MS);
        }
        after = sleeps_of("wp-http");
        /* a deferred request: the worker resumes the connection and wakes the loop, awake or not */
        CHECK(hc_send(&c, "POST", "/create", NULL, "{}", 2, 0) == 0 && hc_recv(&c, "POST", &r) == 0 && r.status == 201);
        hc_resp_free(&r);
        hc_close(&c);
    }
    CHECKF(ok == n + 1, "%d of %d requests answered", ok, n + 1);
    if (hold_worker) {
        atomic_store(&gate_open, 1);
        pthread_join(held, NULL);
        CHECK(held_res.status == 200);
    }
    wp_http_stop(h); /* with the loop still polling when busy_us is long: the stop wakes it all the same */
    return after - before;
}

static void test_busy_poll(void) {
    enum { N = 40 };
    T_CASE("busy-poll: the serving thread stays awake between a connection's requests");
    long awake = sleeps_between_requests(10 * 1000 * 1000, N, false); /* 10 s: it never sleeps in this test */
    long asleep = sleeps_between_requests(0, N, false);
    long gated = sleeps_between_requests(10 * 1000 * 1000, N, true);
    long window = sleeps_between_requests(GAP_MS * 1000 / 5, N, false); /* the window ends well before the gap */
    printf("sleeps of the HTTP thread over %d requests: %ld busy-polling, %ld not, %ld with a worker busy, %ld with "
           "a window of a fifth of the gap\n",
           N, awake, asleep, gated, window);
    CHECKF(awake >= 0 && awake <= N / 10, "busy-polling, the thread slept %ld times in %d requests", awake, N);
    CHECKF(asleep >= N / 2, "without busy-polling, the thread slept only %ld times in %d requests", asleep, N);
    CHECKF(window >= N / 2, "with a window shorter than the gap, the thread slept only %ld times in %d requests",
           window, N);
    CHECKF(gated >= N / 2, "busy-polling while a worker ran, the thread slept only %ld times in %d requests", gated, N);
}

int main(void) {
    wp_http *h = start(LOAD_SLOW, 2 * LOAD_SLOW);
    if (h) {
        port_of = wp_http_port(h);
        T_CASE("thread names");
        CHECKF(threads_named("wp-worker") == LOAD_SLOW, "%d threads named wp-worker, want %d",
               threads_named("wp-worker"), LOAD_SLOW);
        CHECKF(threads_named("wp-http") == 4, "%d threads named wp-http (one event loop per HTTP thread), want 4",
               threads_named("wp-http"));
        test_routing();
        test_bodies();
        test_streams(h);
        test_load(h);
        wp_http_stop(h);
    }
    test_busy();
    test_stop_in_flight();
    test_park_release();
    test_park_room();
    test_bad_start();
    test_busy_poll();
    return t_done("http");
}
