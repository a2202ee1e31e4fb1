/* fuzz_url.c — what a client puts in a URL, through the real HTTP layer (server/http/http.c,
 * libmicrohttpd) and the real handlers on the emulator: ids at the end of a path and query arguments.
 * The first byte picks a request; the rest, up to a newline, is put after its path (bytes a request
 * line cannot hold are %-escaped, so libmicrohttpd decodes them back), and what follows the newline is
 * the body of the raw (application/octet-stream) forms:
 *   GET|DELETE /v1/buffers/<rest>  GET|DELETE /v1/jobs/<rest>  GET /v1/jobs?<rest>
 *   PUT /v1/buffers?<rest>  POST /v1/reduce?<rest>  POST /v1/scan?<rest>  (raw bodies, ?type=&op=...)
 *   GET /v1/buffers/<a buffer that exists>?<rest>  (?data=raw|json|b64|1 ...)
 * A query naming "compile" is skipped (that compiles: not per input). Every answer is 2xx or 4xx, JSON
 * when it is an error. */
#include <ctype.h>

#include "fuzz_app.h"
#include "tests/http_client.h"

static const wp_route routes[] = {
    {"GET", "/v1/jobs", wp_api_jobs_list, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/jobs/", wp_api_job_get, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/jobs/", wp_api_job_delete, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"PUT", "/v1/buffers", wp_api_buffers_put, WP_ROUTE_WORK, &wp_api_buffers_stream},
    {"GET", "/v1/buffers", wp_api_buffers_list, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/buffers/", wp_api_buffer_get, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/buffers/", wp_api_buffer_delete, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"POST", "/v1/reduce", wp_api_reduce, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, &wp_api_reduce_stream},
    {"POST", "/v1/scan", wp_api_scan, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, &wp_api_scan_stream},
    {NULL, NULL, NULL, 0, NULL},
};

static const struct {
    const char *method, *prefix;
    bool raw;
} requests[] = {
    {"GET", "/v1/buffers/", false}, {"DELETE", "/v1/buffers/", false}, {"GET", "/v1/jobs/", false},
    {"DELETE", "/v1/jobs/", false}, {"GET", "/v1/jobs?", false},       {"PUT", "/v1/buffers?", true},
    {"POST", "/v1/reduce?", true},  {"POST", "/v1/scan?", true},       {"GET", NULL, false},
};

static wp_http *http;
static int port;
static char kept[64]; /* a buffer every input may read: 16 f32 */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_app_open(routes);
    wp_http_config hc = {.host = "127.0.0.1", .threads = 2, .workers = 2, .max_body = 1u << 20, .max_queue = 64};
    wp_err err = {0};
    http = wp_http_start(&hc, routes, &fz_app, &err);
    if (!http) {
        fprintf(stderr, "fuzz: cannot listen: %s\n", err.msg);
        abort();
    }
    port = wp_http_port(http);
    static const char body[] = "{\"type\":\"f32\",\"generate\":{\"kind\":\"iota\",\"n\":16},\"ttl\":604800}";
    wp_resp r;
    fz_call(wp_api_buffers_put, "PUT", "/v1/buffers", "application/json", (const uint8_t *)body, sizeof body - 1, false,
            &r);
    cJSON *o = fz_check_resp("PUT /v1/buffers", &r);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (r.status != 201 || !cJSON_IsString(id)) fz_fail("PUT /v1/buffers", &r, "no buffer to read");
    snprintf(kept, sizeof kept, "%s", id->valuestring);
    cJSON_Delete(o);
    free(r.body);
    return 0;
}

/* %XX of anything a request target cannot hold as it is; 0 when the decoded text names "compile". */
static int escape(const uint8_t *p, size_t n, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    char plain[2048];
    size_t o = 0, k = 0;
    for (size_t i = 0; i < n && o + 4 < cap && k + 1 < sizeof plain; i++) {
        uint8_t c = p[i];
        if (c == '%' && i + 2 < n && isxdigit(p[i + 1]) && isxdigit(p[i + 2])) {
            char h[3] = {(char)p[i + 1], (char)p[i + 2], 0};
            plain[k++] = (char)strtol(h, NULL, 16);
        } else {
            plain[k++] = (char)c;
        }
        if (c > 0x20 && c < 0x7f && c != '#') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%', out[o++] = hex[c >> 4], out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
    plain[k] = 0;
    for (size_t i = 0; i < k; i++) plain[i] = (char)tolower((unsigned char)plain[i]);
    return strstr(plain, "compile") ? 0 : 1;
}

static void check(const char *target, const hc_resp *r) {
    char type[128] = "";
    hc_header(r, "Content-Type", type, sizeof type);
    bool json = !strncmp(type, "application/json", 16);
    bool ok = r->status >= 200 && r->status < 500 && (r->status < 300 || r->status >= 400);
    if (ok && r->status >= 400) {
        cJSON *o = json ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
        ok = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "code")) &&
             cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message"));
        cJSON_Delete(o);
    } else if (ok && json) {
        cJSON *o = cJSON_ParseWithLength(r->body, r->body_len);
        ok = o != NULL;
        cJSON_Delete(o);
    }
    if (!ok) {
        fprintf(stderr, "fuzz: %s answered %d (%s): %.*s\n", target, r->status, type,
                (int)(r->body_len < 600 ? r->body_len : 600), r->body);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 1500) return 0;
    int pick = data[0] % (int)WP_ARRAY_LEN(requests);
    const uint8_t *rest = data + 1, *nl = memchr(rest, '\n', size - 1);
    size_t url_len = nl ? (size_t)(nl - rest) : size - 1;
    char escaped[4600], target[4800];
    if (!escape(rest, url_len, escaped, sizeof escaped)) return 0;
    if (requests[pick].prefix)
        snprintf(target, sizeof target, "%s%s", requests[pick].prefix, escaped);
    else
        snprintf(target, sizeof target, "/v1/buffers/%s?%s", kept, escaped);
    const uint8_t *body = nl ? nl + 1 : NULL;
    size_t body_len = nl ? size - 1 - url_len - 1 : 0;
    const char *raw[] = {"Content-Type: application/octet-stream", NULL};
    hc_resp r;
    char err[160] = "";
    int rc = -1;
    for (int attempt = 0; rc && attempt < 5; attempt++) { /* libFuzzer's SIGALRM (-timeout) may cut a call */
        if (attempt) hc_resp_free(&r);
        rc = hc_request("127.0.0.1", port, requests[pick].method, target, requests[pick].raw ? raw : NULL, body,
                        body_len, 0, &r, err, sizeof err);
        if (rc && !strstr(err, "nterrupted")) break;
    }
    if (rc) {
        fprintf(stderr, "fuzz: %s %s: %s\n", requests[pick].method, target, err);
        abort();
    }
    check(target, &r);
    hc_resp_free(&r);
    /* every buffer but the one kept */
    wp_buffer_info *list = NULL;
    size_t n = 0;
    wp_err e = {0};
    if (wp_buffers_list(fz_app.buffers, NULL, &list, &n, &e)) abort();
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].id, kept)) wp_buffers_delete(fz_app.buffers, NULL, list[i].id, NULL, &e);
    free(list);
    return 0;
}
