/* test_reqlog.c — request ids, traceparent, JSON escaping and the access log (reqlog.c), offline:
 *   - which X-Request-Id values are kept, and that new ids are 32 hex digits and differ;
 *   - W3C traceparent: valid ones (version 00 and a later version) and each way of being invalid;
 *   - escaping: quotes, backslashes, control characters, DEL, valid multi-byte UTF-8 kept, invalid bytes,
 *     overlongs, surrogates and truncated sequences as U+FFFD, and a full buffer stops cleanly;
 *   - a JSON error body gets "request_id", other bodies do not;
 *   - the access log: lines from many threads at once are whole JSON objects with the fields, reopening
 *     after the file was moved writes to a new one, and an unopenable file is an error. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/reqlog.h"
#include "t.h"
#include "tests/promtext.h" /* pt_utf8_valid */

static void test_ids(void) {
    T_CASE("request ids");
    CHECK(wp_request_id_valid("a"));
    CHECK(wp_request_id_valid("AZaz09._-"));
    char max[WP_REQUEST_ID_MAX + 2];
    memset(max, 'x', sizeof max);
    max[WP_REQUEST_ID_MAX] = 0;
    CHECK(wp_request_id_valid(max));
    max[WP_REQUEST_ID_MAX] = 'x', max[WP_REQUEST_ID_MAX + 1] = 0;
    CHECK(!wp_request_id_valid(max)); /* 65 */
    CHECK(!wp_request_id_valid(""));
    CHECK(!wp_request_id_valid(NULL));
    CHECK(!wp_request_id_valid("a b"));
    CHECK(!wp_request_id_valid("a\"b"));
    CHECK(!wp_request_id_valid("caf\xc3\xa9"));
    CHECK(!wp_request_id_valid("a/b"));
}

static int cmp_id(const void *a, const void *b) { return strcmp(a, b); }

/* Ids made with and without a wp_reqlog (its random pool, or the kernel each time): 32 hex digits, all
 * different, past several refills of the pool. */
static void test_new_ids(void) {
    T_CASE("new ids");
    enum { N = 2000 };
    static char ids[N][WP_REQUEST_ID_MAX + 1];
    wp_err err;
    wp_reqlog *l = wp_reqlog_open(NULL, NULL, &err);
    int hex = 0;
    for (int i = 0; i < N; i++) {
        wp_reqrec r;
        wp_reqlog_begin(i % 2 ? l : NULL, &r, "GET", "/", NULL, NULL, NULL);
        memcpy(ids[i], r.id, sizeof r.id);
        hex += strlen(r.id) == 32 && strspn(r.id, "0123456789abcdef") == 32;
    }
    wp_reqlog_close(l);
    CHECK(hex == N);
    qsort(ids, N, sizeof ids[0], cmp_id);
    int dup = 0;
    for (int i = 1; i < N; i++) dup += !strcmp(ids[i - 1], ids[i]);
    CHECK(dup == 0);
}

static void test_traceparent(void) {
    T_CASE("traceparent");
    char t[33], p[17];
    CHECK(wp_traceparent_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", t, p) == 0);
    CHECK(!strcmp(t, "4bf92f3577b34da6a3ce929d0e0e4736") && !strcmp(p, "00f067aa0ba902b7"));
    /* a later version may carry more after the flags */
    CHECK(wp_traceparent_parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra", t, p) == 0);
    CHECK(wp_traceparent_parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", t, p) == 0);
    static const char *const bad[] = {
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", /* 00 is exactly 55 */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",       /* upper case */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",       /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",       /* zero parent id */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* version ff */
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* version not hex */
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",        /* short trace id */
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",       /* separators */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",       /* flags */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",      /* later version: '-' after flags */
        "",
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(bad); i++) CHECKF(wp_traceparent_parse(bad[i], t, p) == -1, "bad %zu", i);
    CHECK(wp_traceparent_parse(NULL, t, p) == -1);
}

static const char *esc(const char *s, size_t n) {
    static char out[256];
    size_t len = 0;
    wp_reqlog_escape(out, sizeof out, &len, s, n);
    return out;
}
#define ESC(lit) esc(lit, sizeof lit - 1)

static void test_escape(void) {
    T_CASE("escape");
    CHECK(!strcmp(ESC("plain /v1/x?y=1"), "plain /v1/x?y=1"));
    CHECK(!strcmp(ESC("q\"b\\"), "q\\\"b\\\\"));
    CHECK(!strcmp(ESC("\n\r\t\x01\x1f\x7f"), "\\n\\r\\t\\u0001\\u001f\\u007f"));
    CHECK(!strcmp(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK(!strcmp(ESC("a\xff"
                      "b"),
                  "a\\ufffdb"));
    CHECK(!strcmp(ESC("\xc0\xaf"), "\\ufffd\\ufffd"));                       /* overlong '/' */
    CHECK(!strcmp(ESC("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd"));            /* a surrogate */
    CHECK(!strcmp(ESC("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd")); /* > U+10FFFF */
    CHECK(!strcmp(ESC("x\xe2\x82"), "x\\ufffd\\ufffd"));                     /* cut short */
    CHECK(!strcmp(esc("a\0b", 3), "a\\u0000b"));
    char small[8];
    size_t len = 0;
    CHECK(!wp_reqlog_escape(small, 7, &len, "ab\"cdef", 7)); /* stops, whole escapes only */
    CHECK(!strcmp(small, "ab\\\"cd") && len == 6);
}

static void test_error_body(void) {
    T_CASE("request id into error bodies");
    wp_reqrec r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "rid-1");
    wp_resp resp = {0};
    wp_err e;
    WP_FAIL(&e, 404, "not_found", "x", "no \"such\" thing");
    wp_resp_error(&resp, &e);
    wp_reqlog_respond(&r, &resp);
    cJSON *j = cJSON_ParseWithLength(resp.body, resp.body_len);
    const cJSON *err = cJSON_GetObjectItem(j, "error");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(err, "request_id")) &&
          !strcmp(cJSON_GetObjectItem(err, "request_id")->valuestring, "rid-1"));
    CHECK(!strcmp(cJSON_GetObjectItem(err, "code")->valuestring, "not_found"));
    CHECK(r.status == 404 && r.bytes_out == resp.body_len && resp.body_len == strlen(resp.body));
    cJSON_Delete(j);
    free(resp.body);

    wp_resp ok = {0};
    wp_resp_json(&ok, 200, cJSON_Parse("{\"error\":{\"code\":\"a field named error\"}}"));
    size_t before = ok.body_len;
    wp_reqlog_respond(&r, &ok); /* a 2xx is left alone */
    CHECK(ok.body_len == before && !strstr(ok.body, "request_id"));
    free(ok.body);
    static const char *const not_alone[] = {
        "{\"error\":{\"code\":\"x\"},\"other\":{\"a\":1}}", /* another member after error */
        "{\"error\":{\"code\":\"}}\"},\"b\":{}}",           /* braces inside a string */
        "{\"error\":{}}",                                   /* an empty error */
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(not_alone); i++) {
        wp_resp o = {0};
        wp_resp_bytes(&o, 400, "application/json", not_alone[i], strlen(not_alone[i]));
        wp_reqlog_respond(&r, &o);
        CHECKF(o.body_len == strlen(not_alone[i]) && !memcmp(o.body, not_alone[i], o.body_len), "%zu", i);
        free(o.body);
    }
    static const char nested[] = "{\"error\":{\"code\":\"x\",\"m\":\"a \\\"}\\\" b\",\"d\":{\"k\":[1,{}]}}}";
    wp_resp o = {0};
    wp_resp_bytes(&o, 409, "application/json", nested, sizeof nested - 1);
    wp_reqlog_respond(&r, &o);
    j = cJSON_ParseWithLength(o.body, o.body_len);
    CHECKF(
        j && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "request_id")), "rid-1"),
        "%.*s", (int)o.body_len, o.body);
    cJSON_Delete(j);
    free(o.body);
    wp_resp bytes = {0};
    wp_resp_bytes(&bytes, 400, "text/plain", "{\"error\":{\"x\":1}}", 17);
    wp_reqlog_respond(&r, &bytes); /* not JSON */
    CHECK(bytes.body_len == 17);
    free(bytes.body);
}

#define WRITERS 4
#define LINES 200

typedef struct {
    wp_reqlog *log;
    int thread;
} writer_arg;

static const char *fake_header(void *conn, const char *name) {
    const char *const *h = conn;
    for (; h[0]; h += 2)
        if (!strcasecmp(h[0], name)) return h[1];
    return NULL;
}

static void *write_lines(void *argp) {
    writer_arg *a = argp;
    for (int i = 0; i < LINES; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d-%d", a->thread, i);
        const char *headers[] = {"X-Request-Id",
                                 id,
                                 "User-Agent",
                                 "agent \"x\"\x01\xff",
                                 "traceparent",
                                 "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                 NULL};
        wp_reqrec r;
        wp_reqlog_begin(a->log, &r, "GET", "/v1/jobs/\n\"a\"", fake_header, (void *)headers, NULL);
        wp_resp resp = {0};
        wp_resp_json(&resp, 200, cJSON_Parse("{\"ok\":true}"));
        wp_resp_note_kernel(&resp, "emu", "memory", "shfl_xor", "abc");
        wp_reqlog_respond(&r, &resp);
        wp_reqlog_end(a->log, &r, NULL, 7, true);
        free(resp.body);
    }
    return NULL;
}

static void test_access_log(void) {
    T_CASE("access log");
    char path[] = "/tmp/warpd-reqlog-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    wp_err err = {0};
    wp_reqlog *log = wp_reqlog_open(path, NULL, &err);
    CHECK(log != NULL);
    pthread_t th[WRITERS];
    writer_arg args[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        args[i] = (writer_arg){log, i};
        pthread_create(&th[i], NULL, write_lines, &args[i]);
    }
    for (int i = 0; i < WRITERS; i++) pthread_join(th[i], NULL);
    wp_reqlog_close(log);

    size_t len = 0;
    char *text = wp_read_file(path, &len);
    unlink(path);
    CHECK(text && len && text[len - 1] == '\n' && pt_utf8_valid((const unsigned char *)text, len));
    int lines = 0, good = 0;
    static bool seen[WRITERS][LINES];
    for (char *s = text, *eol; text && (eol = strchr(s, '\n')); s = eol + 1, lines++) {
        *eol = 0;
        bool clean = true;
        for (const char *c = s; *c; c++) clean = clean && (unsigned char)*c >= 0x20;
        cJSON *j = cJSON_Parse(s);
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(j, "id"));
        int t = -1, i = -1;
        if (clean && id && sscanf(id, "t%d-%d", &t, &i) == 2 && t >= 0 && t < WRITERS && i >= 0 && i < LINES &&
            !seen[t][i] && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "path")), "/v1/jobs/\n\"a\"") &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "user_agent")), "agent \"x\"\x01\xef\xbf\xbd") &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "trace_id")), "4bf92f3577b34da6a3ce929d0e0e4736") &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "method")), "GET") &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "backend")), "emu") &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "cache")), "memory") &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "key")), "abc") &&
            cJSON_GetNumberValue(cJSON_GetObjectItem(j, "status")) == 200 &&
            cJSON_GetNumberValue(cJSON_GetObjectItem(j, "bytes_in")) == 7 &&
            cJSON_GetNumberValue(cJSON_GetObjectItem(j, "bytes_out")) == 11 &&
            cJSON_GetNumberValue(cJSON_GetObjectItem(j, "duration_s")) >= 0 && cJSON_GetObjectItem(j, "time")) {
            seen[t][i] = true;
            good++;
        }
        cJSON_Delete(j);
    }
    CHECKF(lines == WRITERS * LINES && good == lines, "%d lines, %d good", lines, good);
    free(text);

    CHECK(wp_reqlog_open("/nonexistent-dir/x.log", NULL, &err) == NULL && strstr(err.msg, "/nonexistent-dir/x.log"));
}

/* One request's line through l. */
static void one_line(wp_reqlog *l, const char *id) {
    const char *headers[] = {"X-Request-Id", id, NULL};
    wp_reqrec r;
    wp_reqlog_begin(l, &r, "GET", "/v1/health", fake_header, (void *)headers, NULL);
    wp_resp resp = {0};
    wp_resp_json(&resp, 200, cJSON_Parse("{}"));
    wp_reqlog_respond(&r, &resp);
    wp_reqlog_end(l, &r, NULL, 0, true);
    free(resp.body);
}

static void test_reopen(void) {
    T_CASE("reopen");
    char path[] = "/tmp/warpd-reqlog-XXXXXX", moved[64];
    int fd = mkstemp(path);
    close(fd);
    snprintf(moved, sizeof moved, "%s.1", path);
    wp_err err = {0};
    wp_reqlog *l = wp_reqlog_open(path, NULL, &err);
    one_line(l, "before");
    CHECK(rename(path, moved) == 0);
    CHECK(wp_reqlog_reopen(l, &err) == 0);
    one_line(l, "after");
    wp_reqlog_close(l);
    char *old = wp_read_file(moved, NULL), *cur = wp_read_file(path, NULL);
    CHECK(old && strstr(old, "\"id\":\"before\"") && !strstr(old, "\"id\":\"after\""));
    CHECK(cur && strstr(cur, "\"id\":\"after\"") && !strstr(cur, "\"id\":\"before\""));
    free(old);
    free(cur);
    unlink(path);
    unlink(moved);
    CHECK(wp_reqlog_reopen(NULL, &err) == 0); /* nothing to reopen */
}

int main(void) {
    test_ids();
    test_new_ids();
    test_traceparent();
    test_escape();
    test_error_body();
    test_access_log();
    test_reopen();
    return t_done("reqlog");
}
