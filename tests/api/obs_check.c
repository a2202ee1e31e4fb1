/* obs_check.c — what an operator sees, against a live daemon (run by tests/api/observe.sh; its name has
 * no "api_" prefix because api.sh's daemon has no access log):
 *   - /metrics after traffic: Content-Type, the WHOLE text through the strict parser (tests/promtext.h),
 *     the families and their types, and series that move by exactly what each request adds (a 404 on
 *     /v1/jobs/{id}, a 405, an unmatched path, a cold warp: compile, queue wait, kernel, a scrape);
 *   - X-Request-Id: generated (32 hex digits, different each time) or the client's when valid (1..64 of
 *     [A-Za-z0-9._-]); JSON errors repeat it as error.request_id, inline or from a worker;
 *   - the access log: every line one JSON object (UTF-8, no raw control characters) with the fields;
 *     the lines of given requests say what happened (route pattern, path, status, bytes, backend,
 *     cache, family, key, trace id); what the client sent is escaped (control characters, quotes,
 *     backslashes, invalid UTF-8 in the path and in headers); concurrent requests give whole lines;
 *     --log-level debug repeats each line on stderr.
 *   obs_check BASE_URL ACCESS_LOG STDERR_FILE     (daemon: --access-log ACCESS_LOG --log-level debug)
 *   obs_check --stdout BASE_URL STDOUT_FILE        (daemon: --access-log -) */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/app.h" /* WP_VERSION */
#include "tests/http_client.h"
#include "tests/promtext.h"
#include "tests/unit/t.h"

static char host[256];
static int port;

static int req(const char *method, const char *path, const char *const *headers, const char *body, hc_resp *r) {
    char err[160] = "";
    int rc = hc_request(host, port, method, path, headers, body, body ? strlen(body) : 0, 0, r, err, sizeof err);
    if (rc) fprintf(stderr, "  %s %s: %s\n", method, path, err);
    return rc;
}

/* One request; returns its status (-1 on a transport error); id_out (if any) gets X-Request-Id. */
static int call(const char *method, const char *path, const char *id, const char *body, char *id_out, hc_resp *keep) {
    char idh[200];
    const char *headers[4] = {"Content-Type: application/json", NULL, NULL, NULL};
    if (id) {
        snprintf(idh, sizeof idh, "X-Request-Id: %s", id);
        headers[1] = idh;
    }
    hc_resp r;
    if (req(method, path, headers, body, &r)) return -1;
    if (id_out) hc_header(&r, "X-Request-Id", id_out, 128) || (id_out[0] = 0);
    int status = r.status;
    if (keep)
        *keep = r;
    else
        hc_resp_free(&r);
    return status;
}

/* GET /metrics, parsed strictly; false (and a failed check) when it does not parse. */
static bool scrape(pt_doc *d) {
    hc_resp r;
    memset(d, 0, sizeof *d);
    if (req("GET", "/metrics", NULL, NULL, &r)) {
        CHECK(!"GET /metrics");
        return false;
    }
    char type[128] = "";
    hc_header(&r, "Content-Type", type, sizeof type);
    CHECKF(r.status == 200 && !strcmp(type, "text/plain; version=0.0.4; charset=utf-8"), "%d %s", r.status, type);
    int rc = pt_parse(r.body, r.body_len, d);
    CHECKF(rc == 0, "/metrics does not parse: %s", d->err);
    hc_resp_free(&r);
    return rc == 0;
}

static double val(const pt_doc *d, const char *name, const char *labels) {
    double v = pt_value(d, name, labels);
    return isnan(v) ? 0 : v; /* a series not there yet counts 0 */
}

#define REQ_COUNT "warpd_http_request_duration_seconds_count"
#define REQ_SUM "warpd_http_request_duration_seconds_sum"

static void traffic(void) {
    call("GET", "/v1/health", NULL, NULL, NULL, NULL);
    call("GET", "/v1/ready", NULL, NULL, NULL, NULL);
    call("GET", "/v1/info", NULL, NULL, NULL, NULL);
    call("GET", "/v1/families", NULL, NULL, NULL, NULL);
    call("GET", "/", NULL, NULL, NULL, NULL);
    call("POST", "/v1/warp", NULL, "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"args\":{\"lane_mask\":1}}", NULL, NULL);
    call("POST", "/v1/warp", NULL, "{not json", NULL, NULL);
    call("POST", "/v1/reduce", NULL, "{\"type\":\"i32\",\"data\":[1,2,3]}", NULL, NULL);
    call("POST", "/v1/scan", NULL, "{\"type\":\"f32\",\"data\":[1,2,3]}", NULL, NULL);
    call("GET", "/v1/jobs", NULL, NULL, NULL, NULL); /* (a job would compile later, in the next test's window) */
    call("PUT", "/v1/buffers", NULL, "{\"type\":\"i32\",\"data\":[1,2]}", NULL, NULL); /* last */
}

static void test_metrics_text(void) {
    T_CASE("metrics: the whole text after traffic");
    traffic();
    pt_doc d;
    for (int tries = 0; tries < 200; tries++) { /* until the last request is measured (it is over) */
        if (tries) usleep(20 * 1000);
        if (!scrape(&d)) return;
        if (val(&d, REQ_COUNT, "code=\"2xx\",route=\"/v1/buffers\"") >= 1 || tries == 199) break;
        pt_free(&d);
    }
    static const struct {
        const char *name, *type;
    } fams[] = {
        {"warpd_http_request_duration_seconds", "histogram"},
        {"warpd_compile_duration_seconds", "histogram"},
        {"warpd_queue_wait_seconds", "histogram"},
        {"warpd_kernel_duration_seconds", "histogram"},
        {"warpd_build_info", "gauge"},
        {"warpd_http_requests_total", "counter"},
        {"warpd_http_responses_total", "counter"},
        {"warpd_device_memory_total_bytes", "gauge"},
        {"process_resident_memory_bytes", "gauge"},
        {"process_virtual_memory_bytes", "gauge"},
        {"process_open_fds", "gauge"},
        {"process_max_fds", "gauge"},
        {"process_cpu_seconds_total", "counter"},
        {"process_start_time_seconds", "gauge"},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(fams); i++)
        CHECKF(!strcmp(pt_type(&d, fams[i].name), fams[i].type), "%s is a %s", fams[i].name, fams[i].type);
    bool build = false;
    for (int i = 0; i < d.n; i++)
        if (!strcmp(d.s[i].name, "warpd_build_info"))
            build = d.s[i].value == 1 && strstr(d.s[i].labels, "version=\"" WP_VERSION "\"") &&
                    strstr(d.s[i].labels, "nvrtc=\"") && strstr(d.s[i].labels, "driver=\"");
    CHECK(build);
    CHECK(val(&d, REQ_COUNT, "code=\"2xx\",route=\"/v1/health\"") >= 1);
    CHECK(val(&d, REQ_COUNT, "code=\"4xx\",route=\"/v1/warp\"") >= 1); /* the bad JSON */
    CHECK(val(&d, REQ_COUNT, "code=\"2xx\",route=\"/{file}\"") >= 1);
    CHECK(val(&d, "warpd_kernel_duration_seconds_count", "backend=\"emu\",family=\"device_reduce\"") >= 1);
    CHECK(val(&d, "warpd_kernel_duration_seconds_count", "backend=\"emu\",family=\"device_scan\"") >= 1);
    for (int i = 0; i < d.n; i++) /* route labels are patterns: no ids, no files */
        CHECKF(!strstr(d.s[i].labels, "route=\"/v1/jobs/j-") && !strstr(d.s[i].labels, "route=\"/index"), "%s",
               d.s[i].labels);
    double rss = val(&d, "process_resident_memory_bytes", ""), fds = val(&d, "process_open_fds", "");
    double start = val(&d, "process_start_time_seconds", ""), now = (double)time(NULL);
    CHECK(rss > 1e6 && fds >= 4 && val(&d, "process_max_fds", "") >= fds);
    CHECKF(start > now - 86400 && start <= now + 1, "start %f now %f", start, now);
    CHECK(val(&d, "process_cpu_seconds_total", "") > 0);
    pt_free(&d);
}

static void test_metrics_move(void) {
    T_CASE("metrics: series move with requests");
    pt_doc a, b;
    if (!scrape(&a)) return;
    CHECK(call("GET", "/v1/jobs/j-nope", NULL, NULL, NULL, NULL) == 404);
    CHECK(call("GET", "/v1/warp", NULL, NULL, NULL, NULL) == 405);
    CHECK(call("POST", "/v1/nothing", NULL, "{}", NULL, NULL) == 404);
    /* a warp whose kernel is not in memory: compiled on a worker after a wait in the queue */
    CHECK(call("POST", "/v1/warp", NULL, "{\"family\":\"shfl_up\",\"type\":\"u64\",\"width\":8,\"args\":{\"delta\":1}}",
               NULL, NULL) == 200);
    /* delta: what the requests above add; per_scrape: what each scrape after the first adds (counted at
     * arrival); at_least: counted when a scrape is over, so the one in flight may be missing */
    static const struct {
        const char *name, *labels;
        double delta, per_scrape;
        bool at_least;
    } moves[] = {
        {REQ_COUNT, "code=\"4xx\",route=\"/v1/jobs/{id}\"", 1, 0, false},
        {REQ_COUNT, "code=\"2xx\",route=\"/v1/jobs/{id}\"", 0, 0, false},
        {REQ_COUNT, "code=\"4xx\",route=\"/v1/warp\"", 1, 0, false},
        {REQ_COUNT, "code=\"4xx\",route=\"unmatched\"", 1, 0, false},
        {REQ_COUNT, "code=\"2xx\",route=\"/v1/warp\"", 1, 0, false},
        {REQ_COUNT, "code=\"2xx\",route=\"/metrics\"", 1, 0, true}, /* the first scrape, once it is over */
        {"warpd_http_request_duration_seconds_bucket", "code=\"4xx\",le=\"+Inf\",route=\"/v1/jobs/{id}\"", 1, 0, false},
        {"warpd_compile_duration_seconds_count", "", 1, 0, false},
        {"warpd_queue_wait_seconds_count", "", 1, 0, false},
        {"warpd_kernel_duration_seconds_count", "backend=\"emu\",family=\"shfl_up\"", 1, 0, false},
        {"warpd_http_requests_total", "", 4, 1, false}, /* the four above, and every scrape after the first */
        {"warpd_http_responses_total", "class=\"4xx\"", 3, 0, false},
    };
    /* A request is measured when it is over, a moment after its client has the reply: scrape again
     * until every move is there. */
    size_t i = 0;
    int scrapes = 0;
    for (int tries = 0; tries < 200; tries++) {
        if (tries) usleep(20 * 1000);
        if (!scrape(&b)) break;
        scrapes++;
        for (i = 0; i < WP_ARRAY_LEN(moves); i++) {
            double d = val(&b, moves[i].name, moves[i].labels) - val(&a, moves[i].name, moves[i].labels);
            double want = moves[i].delta + moves[i].per_scrape * scrapes;
            if (moves[i].at_least ? d < want : d != want) break;
        }
        if (i == WP_ARRAY_LEN(moves) || tries == 199) break; /* all there, or the checks below say what is not */
        pt_free(&b);
    }
    CHECK(b.s != NULL);
    for (size_t k = 0; k < WP_ARRAY_LEN(moves) && b.s; k++) {
        double d = val(&b, moves[k].name, moves[k].labels) - val(&a, moves[k].name, moves[k].labels);
        double want = moves[k].delta + moves[k].per_scrape * scrapes;
        CHECKF(moves[k].at_least ? d >= want : d == want, "%s{%s} moved by %g, not %g", moves[k].name, moves[k].labels,
               d, want);
    }
    if (!b.s) {
        pt_free(&a);
        return;
    }
    CHECK(val(&b, REQ_SUM, "code=\"4xx\",route=\"/v1/jobs/{id}\"") >
          val(&a, REQ_SUM, "code=\"4xx\",route=\"/v1/jobs/{id}\""));
    pt_free(&a);
    pt_free(&b);
}

static bool hex32(const char *s) { return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32; }

/* The error's request_id equals the X-Request-Id header. */
static bool error_has_id(const hc_resp *r, const char *id) {
    cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
    const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "request_id"));
    bool ok = got && !strcmp(got, id) && cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "code");
    cJSON_Delete(j);
    return ok;
}

static void test_request_ids(void) {
    T_CASE("X-Request-Id");
    char a[128], b[128];
    CHECK(call("GET", "/v1/health", NULL, NULL, a, NULL) == 200 && hex32(a));
    CHECK(call("GET", "/v1/health", NULL, NULL, b, NULL) == 200 && hex32(b) && strcmp(a, b));
    CHECK(call("GET", "/v1/health", "my-id_1.2", NULL, a, NULL) == 200 && !strcmp(a, "my-id_1.2"));
    char id64[65], id65[66];
    memset(id64, 'A', 64), id64[64] = 0;
    memset(id65, 'B', 65), id65[65] = 0;
    CHECK(call("GET", "/v1/health", id64, NULL, a, NULL) == 200 && !strcmp(a, id64));
    CHECK(call("GET", "/v1/health", id65, NULL, a, NULL) == 200 && hex32(a));
    CHECK(call("GET", "/v1/health", "has space", NULL, a, NULL) == 200 && hex32(a));
    CHECK(call("GET", "/v1/health", "quote\"d", NULL, a, NULL) == 200 && hex32(a));
    CHECK(call("GET", "/v1/health", "caf\xc3\xa9", NULL, a, NULL) == 200 && hex32(a));

    T_CASE("request_id in JSON errors");
    hc_resp r;
    CHECK(call("GET", "/v1/jobs/j-nope", "err-404", NULL, a, &r) == 404 && error_has_id(&r, "err-404"));
    hc_resp_free(&r);
    CHECK(call("GET", "/v1/warp", "err-405", NULL, a, &r) == 405 && error_has_id(&r, "err-405"));
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/warp", "err-400", "{nope", a, &r) == 400 && error_has_id(&r, "err-400"));
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/compile", NULL, "{\"family\":\"no_such\"}", a, &r) == 400 && hex32(a) &&
          error_has_id(&r, a)); /* from a worker */
    hc_resp_free(&r);
    CHECK(call("GET", "/v1/health", NULL, NULL, a, &r) == 200 && !strstr(r.body, "request_id"));
    hc_resp_free(&r);
}

/* ---------- the access log ---------- */

typedef struct {
    cJSON **lines;
    int n;
} log_lines;

static bool rfc3339_ms(const char *s) {
    int y, mo, d, h, mi, se, ms;
    char z;
    return s && strlen(s) == 24 &&
           sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &se, &ms, &z) == 8 && z == 'Z' &&
           s[4] == '-' && s[10] == 'T' && s[19] == '.';
}

/* Reads the log: every line a JSON object with the fields every line has; bad lines fail checks. */
static void read_log(const char *path, log_lines *out) {
    memset(out, 0, sizeof *out);
    size_t len = 0;
    char *text = wp_read_file(path, &len);
    CHECKF(text && len && text[len - 1] == '\n', "%s: no lines", path);
    CHECK(text && pt_utf8_valid((const unsigned char *)text, len));
    int bad = 0;
    for (char *s = text, *eol; text && (eol = strchr(s, '\n')); s = eol + 1) {
        *eol = 0;
        bool clean = true;
        for (const char *c = s; *c; c++) clean = clean && (unsigned char)*c >= 0x20;
        cJSON *j = cJSON_Parse(s);
        bool ok =
            clean && cJSON_IsObject(j) && rfc3339_ms(cJSON_GetStringValue(cJSON_GetObjectItem(j, "time"))) &&
            cJSON_GetStringValue(cJSON_GetObjectItem(j, "id")) &&
            cJSON_GetStringValue(cJSON_GetObjectItem(j, "method")) &&
            cJSON_GetStringValue(cJSON_GetObjectItem(j, "route")) &&
            cJSON_GetStringValue(cJSON_GetObjectItem(j, "path")) && cJSON_IsNumber(cJSON_GetObjectItem(j, "status")) &&
            cJSON_IsNumber(cJSON_GetObjectItem(j, "bytes_in")) && cJSON_IsNumber(cJSON_GetObjectItem(j, "bytes_out")) &&
            cJSON_GetNumberValue(cJSON_GetObjectItem(j, "duration_s")) >= 0;
        if (!ok) {
            if (bad++ < 3) fprintf(stderr, "  bad log line: %s\n", s);
            cJSON_Delete(j);
            continue;
        }
        cJSON **grown = realloc(out->lines, (size_t)(out->n + 1) * sizeof *grown);
        if (!grown) break;
        out->lines = grown;
        out->lines[out->n++] = j;
    }
    CHECKF(bad == 0, "%d bad lines", bad);
    free(text);
}

static void free_log(log_lines *l) {
    for (int i = 0; i < l->n; i++) cJSON_Delete(l->lines[i]);
    free(l->lines);
}

/* The one line of a request id (NULL, and a failed check, unless exactly one). */
static const cJSON *line_of(const log_lines *l, const char *id) {
    const cJSON *found = NULL;
    int n = 0;
    for (int i = 0; i < l->n; i++)
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l->lines[i], "id")), id)) found = l->lines[i], n++;
    CHECKF(n == 1, "%d lines for id %s", n, id);
    return n == 1 ? found : NULL;
}

static const char *str(const cJSON *line, const char *key) {
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(line, key));
    return s ? s : "(absent)";
}
static double num(const cJSON *line, const char *key) { return cJSON_GetNumberValue(cJSON_GetObjectItem(line, key)); }

#define THREADS 4
#define PER_THREAD 25

static void *hammer(void *arg) {
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char id[32];
        snprintf(id, sizeof id, "cc-%d-%d", t, i);
        call(i % 2 ? "GET" : "POST", i % 2 ? "/v1/health" : "/v1/reduce", id,
             i % 2 ? NULL : "{\"type\":\"u32\",\"data\":[1,2,3,4]}", NULL, NULL);
    }
    return NULL;
}

typedef struct {
    size_t warp_in, warp_out, nf_out;
    char warp_hash[80];
} sent;

static void log_traffic(sent *s) {
    static const char warp[] = "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"args\":{\"lane_mask\":2}}";
    hc_resp r;
    CHECK(call("POST", "/v1/warp", "log-warp", warp, NULL, &r) == 200);
    cJSON *j = cJSON_ParseWithLength(r.body, r.body_len);
    snprintf(s->warp_hash, sizeof s->warp_hash, "%s", str(j, "hash"));
    cJSON_Delete(j);
    s->warp_in = strlen(warp), s->warp_out = r.body_len;
    hc_resp_free(&r);
    CHECK(call("GET", "/v1/jobs/j-nope", "log-404", NULL, NULL, &r) == 404);
    s->nf_out = r.body_len;
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/reduce", "log-reduce", "{\"type\":\"i32\",\"data\":[5,6]}", NULL, NULL) == 200);
    CHECK(call("POST", "/v1/compile", "log-compile", "{\"family\":\"ballot\"}", NULL, NULL) == 200);
    CHECK(call("HEAD", "/v1/health", "log-head", NULL, NULL, NULL) == 200);
    const char *tp[] = {"X-Request-Id: tp-valid",
                        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", NULL};
    CHECK(req("GET", "/v1/health", tp, NULL, &r) == 0 && r.status == 200);
    hc_resp_free(&r);
    const char *tp_bad[] = {"X-Request-Id: tp-bad",
                            "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01", NULL};
    CHECK(req("GET", "/v1/health", tp_bad, NULL, &r) == 0 && r.status == 200); /* accepted, not trusted */
    hc_resp_free(&r);
    /* what a client sends, escaped: control characters, quotes, backslash, invalid UTF-8 (MHD decodes
     * %XX in the path), and the same raw in a header */
    const char *esc[] = {"X-Request-Id: log-esc", "User-Agent: ua \"q\" \\ \x01 \xff end", NULL};
    CHECK(req("GET", "/v1/jobs/a%0a%22b%5c%01%7f%ff%c3%a9", esc, NULL, &r) == 0 && r.status == 404);
    hc_resp_free(&r);
    /* a client that goes away in the middle of its body: logged, with no status (and the body bytes that
     * were read before it went: all 8, unless the daemon saw it go first) */
    hc_conn c;
    static const char head[] = "POST /v1/reduce HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: log-abort\r\n"
                               "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"type\":";
    if (hc_open(&c, host, port, 0) == 0) {
        CHECK(hc_write(&c, head, sizeof head - 1, false) == 0);
        usleep(50 * 1000);
    }
    hc_close(&c);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, hammer, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
}

static void test_access_log(const char *log_path, const char *err_path) {
    T_CASE("access log");
    sent s;
    log_traffic(&s);
    /* a line is written when the request is over, a moment after its reply: wait for the last ones */
    for (int tries = 0; tries < 400; tries++) {
        char *text = wp_read_file(log_path, NULL);
        int missing = 0;
        for (int t = 0; t < THREADS; t++)
            for (int i = 0; i < PER_THREAD; i++) {
                char id[48];
                snprintf(id, sizeof id, "\"id\":\"cc-%d-%d\"", t, i);
                missing += !text || !strstr(text, id);
            }
        missing += !text || !strstr(text, "\"id\":\"log-esc\"") || !strstr(text, "\"id\":\"log-abort\"");
        free(text);
        if (!missing) break;
        usleep(25 * 1000);
    }
    log_lines l;
    read_log(log_path, &l);
    const cJSON *w = line_of(&l, "log-warp");
    if (w) {
        CHECK(!strcmp(str(w, "method"), "POST") && !strcmp(str(w, "route"), "/v1/warp") &&
              !strcmp(str(w, "path"), "/v1/warp") && num(w, "status") == 200);
        CHECK(num(w, "bytes_in") == (double)s.warp_in && num(w, "bytes_out") == (double)s.warp_out);
        CHECK(!strcmp(str(w, "backend"), "emu") && !strcmp(str(w, "family"), "shfl_xor"));
        CHECK(!strcmp(str(w, "key"), s.warp_hash) && strlen(s.warp_hash) == 64);
        CHECKF(strstr("compile memory disk", str(w, "cache")) != NULL, "cache %s", str(w, "cache"));
        CHECK(!strcmp(str(w, "remote"), "127.0.0.1"));
    }
    const cJSON *nf = line_of(&l, "log-404");
    if (nf)
        CHECK(!strcmp(str(nf, "route"), "/v1/jobs/{id}") && !strcmp(str(nf, "path"), "/v1/jobs/j-nope") &&
              num(nf, "status") == 404 && num(nf, "bytes_out") == (double)s.nf_out && num(nf, "bytes_in") == 0);
    const cJSON *rd = line_of(&l, "log-reduce");
    if (rd) CHECK(!strcmp(str(rd, "backend"), "emu") && !strcmp(str(rd, "family"), "device_reduce"));
    const cJSON *cp = line_of(&l, "log-compile");
    if (cp) CHECK(!strcmp(str(cp, "family"), "ballot") && strlen(str(cp, "key")) == 64);
    const cJSON *hd = line_of(&l, "log-head"); /* headers only */
    if (hd)
        CHECK(!strcmp(str(hd, "method"), "HEAD") && !strcmp(str(hd, "route"), "/v1/health") &&
              num(hd, "bytes_out") == 0);
    const cJSON *ab = line_of(&l, "log-abort");
    if (ab)
        CHECK(num(ab, "status") == 0 && cJSON_IsTrue(cJSON_GetObjectItem(ab, "aborted")) && num(ab, "bytes_in") <= 8 &&
              !strcmp(str(ab, "route"), "/v1/reduce"));
    const cJSON *tv = line_of(&l, "tp-valid");
    if (tv)
        CHECK(!strcmp(str(tv, "trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736") &&
              !strcmp(str(tv, "parent_id"), "00f067aa0ba902b7") && !cJSON_GetObjectItem(tv, "traceparent"));
    const cJSON *tb = line_of(&l, "tp-bad");
    if (tb) CHECK(!cJSON_GetObjectItem(tb, "trace_id") && !strcmp(str(tb, "traceparent"), "invalid"));
    const cJSON *e = line_of(&l, "log-esc");
    if (e) {
        CHECKF(!strcmp(str(e, "path"), "/v1/jobs/a\n\"b\\\x01\x7f\xef\xbf\xbd\xc3\xa9"), "path %s", str(e, "path"));
        CHECKF(!strcmp(str(e, "user_agent"), "ua \"q\" \\ \x01 \xef\xbf\xbd end"), "agent %s", str(e, "user_agent"));
        CHECK(!strcmp(str(e, "route"), "/v1/jobs/{id}"));
    }
    int concurrent = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            char id[32];
            snprintf(id, sizeof id, "cc-%d-%d", t, i);
            const cJSON *c = line_of(&l, id);
            concurrent += c && num(c, "status") == 200;
        }
    CHECK(concurrent == THREADS * PER_THREAD);
    free_log(&l);

    T_CASE("--log-level debug: each line on stderr too");
    char *err = wp_read_file(err_path, NULL);
    const char *at = err ? strstr(err, "warpd: debug: request {\"time\"") : NULL;
    bool found = false;
    for (; at && !found; at = strstr(at + 1, "warpd: debug: request {"))
        found = !strncmp(strchr(at, '{'), "{\"time\"", 7) && strstr(at, "\"id\":\"log-warp\"") &&
                strstr(at, "\"id\":\"log-warp\"") < strchr(at, '\n');
    CHECK(found);
    free(err);
}

/* --access-log -: the line goes to stdout, after the "listening" line. */
static void test_stdout(const char *out_path) {
    T_CASE("--access-log -");
    CHECK(call("GET", "/v1/health", "stdout-1", NULL, NULL, NULL) == 200);
    bool found = false;
    for (int tries = 0; tries < 100 && !found; tries++) {
        char *text = wp_read_file(out_path, NULL);
        for (char *s = text, *eol; s && !found && (eol = strchr(s, '\n')); s = eol + 1) {
            *eol = 0;
            cJSON *j = s[0] == '{' ? cJSON_Parse(s) : NULL;
            found = j && !strcmp(str(j, "id"), "stdout-1") && !strcmp(str(j, "route"), "/v1/health") &&
                    num(j, "status") == 200;
            cJSON_Delete(j);
        }
        free(text);
        if (!found) usleep(50 * 1000);
    }
    CHECK(found);
}

int main(int argc, char **argv) {
    bool to_stdout = argc == 4 && !strcmp(argv[1], "--stdout");
    if (argc != 4) {
        fprintf(stderr, "usage: obs_check BASE_URL ACCESS_LOG STDERR_FILE | obs_check --stdout BASE_URL STDOUT_FILE\n");
        return 2;
    }
    char prefix[64];
    if (hc_parse_url(argv[to_stdout ? 2 : 1], host, sizeof host, &port, prefix, sizeof prefix)) return 2;
    if (to_stdout) {
        test_stdout(argv[3]);
    } else {
        test_metrics_text();
        test_metrics_move();
        test_request_ids();
        test_access_log(argv[2], argv[3]);
    }
    return t_done("observe");
}
