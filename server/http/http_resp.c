/* http_resp.c — responses: what handlers fill (wp_resp_json, wp_resp_error, wp_resp_bytes), the query
 * arguments they read, and the hand-over of a finished response to libmicrohttpd with its headers.
 * Owns: nothing but the bytes of a wp_resp until they are sent (a small answer's buffer then goes to its
 * call, http.c's, for the call's next answer). */
#include "http_impl.h"
#include "util/jsonout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char json_type[] = "application/json";
/* The largest answer buffer a call keeps for its next answer (wp_req_take_text): each HTTP thread keeps up
 * to 32 idle calls, the server 64 more. */
#define HTTP_TEXT_KEPT_MAX (16u * 1024u)

/* ---------- responses ---------- */

void http_resp_set(wp_resp *r, int status, const char *content_type, char *body, size_t n) {
    free(r->body);
    r->status = status;
    r->content_type = content_type;
    r->body = body;
    r->body_len = n;
    r->body_cap = 0;
}

void wp_resp_json(wp_resp *r, int status, cJSON *obj) {
    size_t n = 0;
    char *text = obj ? wp_json_print(obj, &n) : NULL; /* cJSON_PrintUnformatted's bytes, faster */
    cJSON_Delete(obj);
    if (!text) {
        static const char oom[] = "{\"error\":{\"code\":\"internal\",\"message\":\"cannot build the response\"}}";
        text = strdup(oom);
        n = text ? strlen(text) : 0;
        status = 500;
    }
    http_resp_set(r, status, json_type, text, n);
}

void wp_resp_json_text(wp_resp *r, int status, char *text, size_t n) {
    if (!text) {
        wp_resp_json(r, status, NULL); /* the 500 of an answer that could not be built */
        return;
    }
    http_resp_set(r, status, json_type, text, n);
}

void wp_resp_json_text_kept(wp_resp *r, int status, char *text, size_t n, size_t cap) {
    wp_resp_json_text(r, status, text, n);
    if (text) r->body_cap = cap;
}

void wp_resp_error(wp_resp *r, const wp_err *e) {
    cJSON *root = cJSON_CreateObject();
    cJSON *error = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(error, "code", e && e->code ? e->code : "internal");
    cJSON_AddStringToObject(error, "message", e ? e->msg : "internal error");
    if (e && e->field[0]) cJSON_AddStringToObject(error, "field", e->field);
    wp_resp_json(r, e && e->status ? e->status : 500, root);
}

void wp_resp_bytes(wp_resp *r, int status, const char *content_type, const void *data, size_t n) {
    char *copy = malloc(n ? n : 1);
    if (!copy) {
        wp_err e;
        WP_FAIL(&e, 500, "internal", "", "out of memory for a %zu-byte response", n);
        wp_resp_error(r, &e);
        return;
    }
    if (n) memcpy(copy, data, n);
    http_resp_set(r, status, content_type, copy, n);
}

void http_resp_fail(wp_resp *r, int status, const char *code, const char *field, const char *msg) {
    wp_err e;
    WP_FAIL(&e, status, code, field, "%s", msg);
    wp_resp_error(r, &e);
}

const char *wp_req_query(const wp_req *req, const char *name) {
    if (!req->conn) return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

static bool is_json(const char *content_type) { return strncmp(content_type, json_type, sizeof json_type - 1) == 0; }

static void add_header(void *mr, const char *name, const char *value) { MHD_add_response_header(mr, name, value); }

double wp_req_handoff_us(const wp_req *q) {
    const uint64_t body = q->t_body_ns ? q->t_body_ns : q->t_start_ns;
    return q->t_handler_ns > body ? (double)(q->t_handler_ns - body) / 1e3 : 0.0;
}

/* Appends "name;dur=M.MMM" (milliseconds, to the µs) to out at *n; no printf on every request. */
static void timing_put(char *out, size_t cap, size_t *n, const char *name, double us) {
    char num[32];
    unsigned long long v = us > 0 ? (unsigned long long)(us + 0.5) : 0; /* µs */
    int i = (int)sizeof num;
    num[--i] = 0;
    for (int d = 0; d < 3; d++, v /= 10) num[--i] = (char)('0' + v % 10);
    num[--i] = '.';
    do num[--i] = (char)('0' + v % 10);
    while ((v /= 10) && i > 1);
    const size_t nl = strlen(name), vl = sizeof num - 1 - (size_t)i;
    if (*n + nl + vl + 8 >= cap) return;
    if (*n) out[(*n)++] = ',', out[(*n)++] = ' ';
    memcpy(out + *n, name, nl);
    memcpy(out + *n + nl, ";dur=", 5);
    memcpy(out + *n + nl + 5, num + i, vl);
    *n += nl + 5 + vl;
    out[*n] = 0;
}

/* Server-Timing: the body's arrival, the hand-off, the handler's stages, the answer, the total. */
static void add_server_timing(const wp_call *c, struct MHD_Response *mr) {
    const wp_req *q = &c->req;
    const wp_resp_stages *st = &c->resp.stages;
    const uint64_t now = wp_now_ns(), body = q->t_body_ns ? q->t_body_ns : now;
    char out[512];
    size_t n = 0;
    out[0] = 0;
    timing_put(out, sizeof out, &n, "receive", (double)(body - q->t_start_ns) / 1e3);
    if (q->t_handler_ns) timing_put(out, sizeof out, &n, "handoff", wp_req_handoff_us(q));
    for (int i = 0; i < st->n; i++) timing_put(out, sizeof out, &n, st->s[i].name, st->s[i].us);
    if (st->t_done_ns && now > st->t_done_ns)
        timing_put(out, sizeof out, &n, "answer", (double)(now - st->t_done_ns) / 1e3);
    timing_put(out, sizeof out, &n, "total", (double)(now - q->t_start_ns) / 1e3);
    MHD_add_response_header(mr, "Server-Timing", out);
}

/* Hands c->resp to libmicrohttpd (which frees the body) and counts it. allow: Allow header or NULL. */
enum MHD_Result http_send_resp(wp_http *h, wp_call *c, const char *allow) {
    wp_resp *r = &c->resp;
    if (r->status == 0) http_resp_fail(r, 500, "internal", "", "the handler set no response");
    wp_reqlog_respond(&c->rec, r); /* the request id into an error body */
    /* a small answer's buffer stays the call's, for its next answer: libmicrohttpd reads it until the
     * request completes, and the next answer is written after that */
    const bool keep = r->body && r->body_cap >= r->body_len && r->body_cap <= HTTP_TEXT_KEPT_MAX && r->status == 200 &&
                      r->content_type == json_type; /* as wp_resp_json_text_kept set it */
    struct MHD_Response *mr = r->body ? MHD_create_response_from_buffer(
                                            r->body_len, r->body, keep ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_FREE)
                                      : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!mr) return MHD_NO; /* c->resp.body is still ours: freed when the request completes */
    if (keep) {
        free(c->text); /* one the handler did not take */
        c->text = r->body, c->text_cap = r->body_cap;
    }
    r->body = NULL;
    const char *type = r->content_type ? r->content_type : json_type;
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (is_json(type)) MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r->retry_after[0]) MHD_add_response_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after);
    if (r->location[0]) MHD_add_response_header(mr, MHD_HTTP_HEADER_LOCATION, r->location);
    if (allow) MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, allow);
    wp_access_headers(&c->access, add_header, mr);
    MHD_add_response_header(mr, "X-Request-Id", c->rec.id);
    if (c->req.t_start_ns) add_server_timing(c, mr);
    enum MHD_Result ok = MHD_queue_response(c->mc, (unsigned)r->status, mr);
    MHD_destroy_response(mr);
    if (r->status >= 500)
        atomic_fetch_add(&h->responses_5xx, 1);
    else if (r->status >= 400)
        atomic_fetch_add(&h->responses_4xx, 1);
    else if (r->status >= 200 && r->status < 300)
        atomic_fetch_add(&h->responses_2xx, 1);
    return ok;
}
