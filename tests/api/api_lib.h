/* api_lib.h — the table-driven API test runner's insides: subset matching of JSON, and running case files
 * (JSON arrays of {name, method, path, headers, body|body_text|body_repeat, expect, save, retry}) against a
 * daemon over tests/http_client.h. api_runner.c is its command line; tests/unit/test_api_runner.c tests it.
 * Header-only: every function is static. The case format is documented in api_runner.c. */
#ifndef WP_API_LIB_H
#define WP_API_LIB_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/api/api_curl.h"
#include "tests/http_client.h"

#define API_SHOW_MAX 200          /* characters of expected / got shown on a mismatch */
#define API_TIMEOUT_MS 60000      /* per request, unless a case sets timeout_ms (NVRTC compiles take a while) */
#define API_REPEAT_MAX (1u << 30) /* largest body_repeat body */

typedef struct {
    char host[256];
    int port;
    char prefix[256]; /* path prefix from the base URL, "" usually */
    cJSON *vars;      /* values saved by "save", substituted as {{name}} */
    FILE *out;        /* where failures are reported (stderr unless set) */
    bool verbose;     /* also print passing cases */
    int passed, failed;
    const api_curl *curl; /* non-NULL: send every request with the curl program (HTTPS, Unix socket) */
} api_ctx;

static inline int api_ctx_init(api_ctx *ctx, const char *base_url) {
    memset(ctx, 0, sizeof *ctx);
    ctx->out = stderr;
    ctx->vars = cJSON_CreateObject();
    int rc = hc_parse_url(base_url, ctx->host, sizeof ctx->host, &ctx->port, ctx->prefix, sizeof ctx->prefix);
    char authority[300]; /* {{authority}}: host:port as a Host header names the daemon */
    bool v6 = strchr(ctx->host, ':') && ctx->host[0] != '[';
    snprintf(authority, sizeof authority, "%s%s%s:%d", v6 ? "[" : "", ctx->host, v6 ? "]" : "", ctx->port);
    cJSON_AddStringToObject(ctx->vars, "authority", authority);
    return rc;
}

static inline void api_ctx_free(api_ctx *ctx) {
    cJSON_Delete(ctx->vars);
    ctx->vars = NULL;
}

/* ---------- matching ---------- */

/* A JSON value as at most API_SHOW_MAX characters. */
static inline void api_show(const cJSON *v, char *out, size_t cap) {
    if (!v) {
        snprintf(out, cap, "(missing)");
        return;
    }
    char *text = cJSON_PrintUnformatted(v);
    if (!text) {
        snprintf(out, cap, "(unprintable)");
        return;
    }
    size_t n = strlen(text);
    if (n <= API_SHOW_MAX && n < cap) {
        memcpy(out, text, n + 1);
    } else { /* head of the text, then how long it was */
        char suffix[40];
        size_t sn = (size_t)snprintf(suffix, sizeof suffix, "...(%zu chars)", n);
        size_t keep = cap > sn + 1 ? cap - sn - 1 : 0;
        if (keep > API_SHOW_MAX) keep = API_SHOW_MAX;
        memcpy(out, text, keep);
        snprintf(out + keep, cap - keep, "%s", suffix);
    }
    free(text);
}

static inline const char *api_type_name(const cJSON *v) {
    if (cJSON_IsNumber(v)) return "number";
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsObject(v)) return "object";
    if (cJSON_IsBool(v)) return "bool";
    if (cJSON_IsNull(v)) return "null";
    return "missing";
}

/* An object whose every key starts with '$' is an operator ({"$type": ...}, {"$gt": 0, "$lt": 9}, ...). */
static inline bool api_is_operator(const cJSON *e) {
    if (!cJSON_IsObject(e) || !e->child) return false;
    for (const cJSON *k = e->child; k; k = k->next)
        if (!k->string || k->string[0] != '$') return false;
    return true;
}

static inline bool api_fail_at(char *why, size_t cap, const char *path, const cJSON *e, const cJSON *g, const char *fmt,
                               ...) {
    char note[160] = "", es[API_SHOW_MAX + 32], gs[API_SHOW_MAX + 32];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(note, sizeof note, fmt, ap);
        va_end(ap);
    }
    api_show(e, es, sizeof es);
    api_show(g, gs, sizeof gs);
    snprintf(why, cap, "%s: %s%sexpected %s, got %s", path, note, note[0] ? "; " : "", es, gs);
    return false;
}

static inline bool api_match_at(const cJSON *e, const cJSON *g, char *path, size_t path_cap, char *why, size_t why_cap);

static inline bool api_match_operator(const cJSON *e, const cJSON *g, char *path, char *why, size_t why_cap) {
    for (const cJSON *op = e->child; op; op = op->next) {
        const char *name = op->string;
        if (!strcmp(name, "$type")) {
            if (!cJSON_IsString(op) || strcmp(op->valuestring, api_type_name(g)))
                return api_fail_at(why, why_cap, path, e, g, "wrong type %s", api_type_name(g));
        } else if (!strcmp(name, "$lt") || !strcmp(name, "$gt") || !strcmp(name, "$le") || !strcmp(name, "$ge")) {
            if (!cJSON_IsNumber(op)) return api_fail_at(why, why_cap, path, e, g, "%s needs a number", name);
            if (!cJSON_IsNumber(g)) return api_fail_at(why, why_cap, path, e, g, "not a number");
            double x = g->valuedouble, y = op->valuedouble;
            bool ok = name[1] == 'l' ? (name[2] == 't' ? x < y : x <= y) : (name[2] == 't' ? x > y : x >= y);
            if (!ok) return api_fail_at(why, why_cap, path, e, g, NULL);
        } else if (!strcmp(name, "$len")) {
            int n = cJSON_IsArray(g) || cJSON_IsObject(g) ? cJSON_GetArraySize(g)
                    : cJSON_IsString(g)                   ? (int)strlen(g->valuestring)
                                                          : -1;
            if (!cJSON_IsNumber(op) || n != op->valueint) return api_fail_at(why, why_cap, path, e, g, "length %d", n);
        } else if (!strcmp(name, "$contains")) {
            if (!cJSON_IsString(op) || !cJSON_IsString(g) || !strstr(g->valuestring, op->valuestring))
                return api_fail_at(why, why_cap, path, e, g, NULL);
        } else if (!strcmp(name, "$absent")) {
            if (g) return api_fail_at(why, why_cap, path, e, g, "should be absent");
        } else {
            return api_fail_at(why, why_cap, path, e, g, "unknown operator %s in the case", name);
        }
    }
    return true;
}

static inline bool api_match_at(const cJSON *e, const cJSON *g, char *path, size_t path_cap, char *why,
                                size_t why_cap) {
    if (cJSON_IsString(e) && !strcmp(e->valuestring, "*")) {
        return g ? true : api_fail_at(why, why_cap, path, e, g, NULL);
    }
    if (api_is_operator(e)) return api_match_operator(e, g, path, why, why_cap);
    if (!g) return api_fail_at(why, why_cap, path, e, g, NULL);
    size_t len = strlen(path);
    if (cJSON_IsObject(e)) {
        if (!cJSON_IsObject(g)) return api_fail_at(why, why_cap, path, e, g, "not an object");
        for (const cJSON *ek = e->child; ek; ek = ek->next) {
            snprintf(path + len, path_cap - len, ".%s", ek->string);
            if (!api_match_at(ek, cJSON_GetObjectItemCaseSensitive(g, ek->string), path, path_cap, why, why_cap))
                return false;
            path[len] = 0;
        }
        return true;
    }
    if (cJSON_IsArray(e)) {
        if (!cJSON_IsArray(g)) return api_fail_at(why, why_cap, path, e, g, "not an array");
        int en = cJSON_GetArraySize(e), gn = cJSON_GetArraySize(g);
        const cJSON *last = cJSON_GetArrayItem(e, en - 1);
        bool open_end = en > 0 && cJSON_IsString(last) && !strcmp(last->valuestring, "..."); /* [a, b, "..."] */
        int check = open_end ? en - 1 : en;
        if (open_end ? gn < check : gn != en)
            return api_fail_at(why, why_cap, path, e, g, "array length %d, expected %s%d", gn, open_end ? ">= " : "",
                               check);
        const cJSON *gi = g->child;
        int i = 0;
        for (const cJSON *ei = e->child; i < check; ei = ei->next, gi = gi->next, i++) {
            snprintf(path + len, path_cap - len, "[%d]", i);
            if (!api_match_at(ei, gi, path, path_cap, why, why_cap)) return false;
            path[len] = 0;
        }
        return true;
    }
    if (cJSON_IsNumber(e)) {
        if (cJSON_IsNumber(g) && (g->valuedouble == e->valuedouble)) return true;
        return api_fail_at(why, why_cap, path, e, g, NULL);
    }
    if (cJSON_IsString(e)) {
        if (cJSON_IsString(g) && !strcmp(e->valuestring, g->valuestring)) return true;
        return api_fail_at(why, why_cap, path, e, g, NULL);
    }
    if (cJSON_IsBool(e)) {
        if (cJSON_IsBool(g) && cJSON_IsTrue(e) == cJSON_IsTrue(g)) return true;
        return api_fail_at(why, why_cap, path, e, g, NULL);
    }
    if (cJSON_IsNull(e)) return cJSON_IsNull(g) ? true : api_fail_at(why, why_cap, path, e, g, NULL);
    return api_fail_at(why, why_cap, path, e, g, "unsupported expectation");
}

/* Does got match the expected subset? On a mismatch, why gets "$.path: expected X, got Y". */
static inline bool api_match(const cJSON *expected, const cJSON *got, char *why, size_t why_cap) {
    char path[512] = "$";
    why[0] = 0;
    return api_match_at(expected, got, path, sizeof path, why, why_cap);
}

/* ---------- variables: "save" and {{name}} ---------- */

/* Follows "a.b[2].c" (a leading "$." is allowed) into v. */
static inline const cJSON *api_lookup(const cJSON *v, const char *path) {
    if (!strncmp(path, "$.", 2))
        path += 2;
    else if (!strcmp(path, "$"))
        return v;
    char key[128];
    while (v && *path) {
        if (*path == '[') {
            v = cJSON_GetArrayItem(v, atoi(path + 1));
            path = strchr(path, ']');
            if (!path) return NULL;
            path++;
        } else {
            size_t n = strcspn(path, ".[");
            if (n >= sizeof key) return NULL;
            memcpy(key, path, n);
            key[n] = 0;
            v = cJSON_GetObjectItemCaseSensitive(v, key);
            path += n;
        }
        if (*path == '.') path++;
    }
    return v;
}

/* text with every {{name}} replaced by the saved value; malloc'd. Unknown names stay as they are. */
static inline char *api_subst(const api_ctx *ctx, const char *text) {
    size_t cap = strlen(text) + 1, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *p = text; *p;) {
        const char *end = !strncmp(p, "{{", 2) ? strstr(p + 2, "}}") : NULL;
        const cJSON *var = NULL;
        if (end) {
            char name[128];
            size_t k = (size_t)(end - p - 2);
            if (k < sizeof name) {
                memcpy(name, p + 2, k);
                name[k] = 0;
                var = cJSON_GetObjectItemCaseSensitive(ctx->vars, name);
            }
        }
        const char *piece = var ? var->valuestring : p;
        size_t k = var ? strlen(piece) : 1;
        if (n + k + 1 > cap) {
            cap = (n + k + 1) * 2;
            char *grown = realloc(out, cap);
            if (!grown) {
                free(out);
                return NULL;
            }
            out = grown;
        }
        memcpy(out + n, piece, k);
        n += k;
        p = var ? end + 2 : p + 1;
    }
    out[n] = 0;
    return out;
}

/* Substitutes {{name}} in every string of a JSON value, in place. */
static inline void api_subst_json(const api_ctx *ctx, cJSON *v) {
    if (cJSON_IsString(v) && strstr(v->valuestring, "{{")) {
        char *s = api_subst(ctx, v->valuestring);
        if (s) {
            cJSON_SetValuestring(v, s);
            free(s);
        }
    }
    for (cJSON *c = v ? v->child : NULL; c; c = c->next) api_subst_json(ctx, c);
}

static inline void api_save(api_ctx *ctx, const cJSON *save, const cJSON *body) {
    for (const cJSON *s = save ? save->child : NULL; s; s = s->next) {
        const cJSON *v = cJSON_IsString(s) ? api_lookup(body, s->valuestring) : NULL;
        char text[128];
        if (cJSON_IsString(v))
            snprintf(text, sizeof text, "%s", v->valuestring);
        else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e15)
            snprintf(text, sizeof text, "%.0f", v->valuedouble);
        else if (v)
            api_show(v, text, sizeof text);
        else
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(ctx->vars, s->string);
        cJSON_AddStringToObject(ctx->vars, s->string, text);
    }
}

/* ---------- running cases ---------- */

static inline void api_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Checks one response against "expect". Returns true, or false with why. */
static inline bool api_check(const cJSON *expect, const hc_resp *r, cJSON **body_json, char *why, size_t cap) {
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(expect, "status");
    char gs[API_SHOW_MAX + 32];
    snprintf(gs, sizeof gs, "%.*s", API_SHOW_MAX, r->body);
    if (cJSON_IsNumber(status) && status->valueint != r->status) {
        snprintf(why, cap, "status: expected %d, got %d (body %s)", status->valueint, r->status, gs);
        return false;
    }
    const cJSON *headers = cJSON_GetObjectItemCaseSensitive(expect, "headers");
    for (const cJSON *h = headers ? headers->child : NULL; h; h = h->next) {
        char value[512];
        const char *got = hc_header(r, h->string, value, sizeof value);
        bool ok = cJSON_IsNull(h)                                     ? !got
                  : cJSON_IsString(h) && !strcmp(h->valuestring, "*") ? got != NULL
                  : cJSON_IsString(h)                                 ? got && !strcmp(got, h->valuestring)
                                                                      : false;
        if (!ok) {
            snprintf(why, cap, "header %s: expected %s, got %s", h->string,
                     cJSON_IsString(h) ? h->valuestring : "(absent)", got ? got : "(absent)");
            return false;
        }
    }
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(expect, "body_text");
    if (cJSON_IsString(text) && (strlen(text->valuestring) != r->body_len || strcmp(text->valuestring, r->body))) {
        snprintf(why, cap, "body: expected %.*s, got %s", API_SHOW_MAX, text->valuestring, gs);
        return false;
    }
    const cJSON *contains = cJSON_GetObjectItemCaseSensitive(expect, "body_contains");
    for (const cJSON *c = cJSON_IsArray(contains) ? contains->child : contains; c;
         c = cJSON_IsArray(contains) ? c->next : NULL) {
        if (cJSON_IsString(c) && !strstr(r->body, c->valuestring)) {
            snprintf(why, cap, "body does not contain %.*s; got %s", API_SHOW_MAX, c->valuestring, gs);
            return false;
        }
    }
    *body_json = cJSON_ParseWithLength(r->body, r->body_len);
    const cJSON *json = cJSON_GetObjectItemCaseSensitive(expect, "json");
    if (json && !*body_json) {
        snprintf(why, cap, "body is not JSON: %s", gs);
        return false;
    }
    return json ? api_match(json, *body_json, why, cap) : true;
}

/* Sends the case's request once. Returns 0 or -1 with why. */
static inline int api_send(api_ctx *ctx, const cJSON *tc, hc_resp *r, char *why, size_t cap) {
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(tc, "method");
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(tc, "path");
    const cJSON *headers = cJSON_GetObjectItemCaseSensitive(tc, "headers");
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(tc, "body");
    const cJSON *body_text = cJSON_GetObjectItemCaseSensitive(tc, "body_text");
    const cJSON *repeat = cJSON_GetObjectItemCaseSensitive(tc, "body_repeat");
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(tc, "timeout_ms");
    const char *m = cJSON_IsString(method) ? method->valuestring : "GET";
    memset(r, 0, sizeof *r);
    if (!cJSON_IsString(path)) {
        snprintf(why, cap, "case has no \"path\"");
        return -1;
    }

    char *payload = NULL;
    size_t payload_len = 0;
    bool default_json = false;
    if (body) {
        cJSON *copy = cJSON_Duplicate(body, true);
        api_subst_json(ctx, copy);
        payload = cJSON_PrintUnformatted(copy);
        cJSON_Delete(copy);
        payload_len = payload ? strlen(payload) : 0;
        default_json = true;
    } else if (cJSON_IsString(body_text)) {
        payload = api_subst(ctx, body_text->valuestring);
        payload_len = payload ? strlen(payload) : 0;
    } else if (repeat) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(repeat, "text");
        const cJSON *count = cJSON_GetObjectItemCaseSensitive(repeat, "count");
        size_t tn = cJSON_IsString(t) ? strlen(t->valuestring) : 0;
        double total = cJSON_IsNumber(count) ? count->valuedouble * (double)tn : -1;
        if (tn == 0 || total < 0 || total > API_REPEAT_MAX) {
            snprintf(why, cap, "body_repeat needs a non-empty text and a count (at most %u bytes)", API_REPEAT_MAX);
            return -1;
        }
        payload_len = (size_t)total;
        payload = malloc(payload_len + 1);
        for (size_t i = 0; payload && i < payload_len; i += tn) memcpy(payload + i, t->valuestring, tn);
    }

    int nh = cJSON_GetArraySize(headers);
    char **lines = calloc((size_t)nh + 2, sizeof *lines);
    int k = 0;
    for (const cJSON *h = headers ? headers->child : NULL; lines && h; h = h->next) {
        if (!cJSON_IsString(h)) continue;
        char *v = api_subst(ctx, h->valuestring);
        size_t n = strlen(h->string) + (v ? strlen(v) : 0) + 3;
        lines[k] = malloc(n);
        if (lines[k]) snprintf(lines[k], n, "%s: %s", h->string, v ? v : "");
        free(v);
        if (lines[k]) k++;
    }
    if (lines && default_json && !hc_has_header((const char *const *)lines, "Content-Type"))
        lines[k++] = strdup("Content-Type: application/json");

    char *sub_path = api_subst(ctx, path->valuestring);
    size_t full_len = strlen(ctx->prefix) + (sub_path ? strlen(sub_path) : 0) + 1;
    char *full = malloc(full_len);
    if (full) snprintf(full, full_len, "%s%s", ctx->prefix, sub_path ? sub_path : "");
    int rc = -1;
    if (!lines || !full || (!payload && (body || body_text || repeat))) {
        snprintf(why, cap, "out of memory building the request");
    } else {
        unsigned flags = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tc, "chunked")) ? HC_CHUNKED : 0;
        if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(headers, "Content-Type"))) flags |= HC_NO_TYPE;
        int timeout_ms = cJSON_IsNumber(timeout) ? timeout->valueint : API_TIMEOUT_MS;
        if (ctx->curl) {
            rc = api_curl_send(ctx->curl, m, full, lines, payload, payload_len, flags, timeout_ms, r, why, cap);
        } else {
            hc_conn c;
            rc = hc_open(&c, ctx->host, ctx->port, timeout_ms);
            if (rc == 0) rc = hc_send(&c, m, full, (const char *const *)lines, payload, payload_len, flags);
            if (rc == 0) rc = hc_recv(&c, m, r);
            if (rc < 0) snprintf(why, cap, "%s %s: %s", m, full, c.err);
            hc_close(&c);
        }
    }
    for (int i = 0; lines && i < k; i++) free(lines[i]);
    free(lines);
    free(sub_path);
    free(full);
    free(payload);
    return rc;
}

/* Runs one case: send, check, retry while asked, save. Counts and reports it. Returns 0 on a pass. */
static inline int api_run_case(api_ctx *ctx, const cJSON *tc, const char *label) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc, "name");
    const char *n = cJSON_IsString(name) ? name->valuestring : "(unnamed)";
    const cJSON *expect = cJSON_GetObjectItemCaseSensitive(tc, "expect");
    const cJSON *retry = cJSON_GetObjectItemCaseSensitive(tc, "retry");
    const cJSON *times = cJSON_GetObjectItemCaseSensitive(retry, "times");
    const cJSON *delay = cJSON_GetObjectItemCaseSensitive(retry, "delay_ms");
    int attempts = cJSON_IsNumber(times) && times->valueint > 0 ? times->valueint : 1;
    char why[1024] = "";
    bool ok = false;
    for (int attempt = 0; attempt < attempts && !ok; attempt++) {
        if (attempt) api_sleep_ms(cJSON_IsNumber(delay) ? delay->valueint : 100);
        hc_resp r;
        cJSON *body = NULL;
        if (api_send(ctx, tc, &r, why, sizeof why) == 0) {
            ok = api_check(expect, &r, &body, why, sizeof why);
            if (ok) api_save(ctx, cJSON_GetObjectItemCaseSensitive(tc, "save"), body);
        }
        cJSON_Delete(body);
        hc_resp_free(&r);
    }
    if (ok) {
        ctx->passed++;
        if (ctx->verbose) fprintf(ctx->out, "ok   %s: %s\n", label, n);
        return 0;
    }
    ctx->failed++;
    fprintf(ctx->out, "FAIL %s: %s: %s\n", label, n, why);
    return -1;
}

/* Runs every case of a JSON array given as text. Returns the number that failed. */
static inline int api_run_text(api_ctx *ctx, const char *text, const char *label) {
    cJSON *cases = cJSON_Parse(text);
    if (!cJSON_IsArray(cases)) {
        const char *at = cJSON_GetErrorPtr();
        fprintf(ctx->out, "FAIL %s: not a JSON array of cases%s%.40s\n", label, at ? " near: " : "", at ? at : "");
        ctx->failed++;
        cJSON_Delete(cases);
        return 1;
    }
    int before = ctx->failed;
    for (const cJSON *tc = cases->child; tc; tc = tc->next) api_run_case(ctx, tc, label);
    cJSON_Delete(cases);
    return ctx->failed - before;
}

static inline int api_run_file(api_ctx *ctx, const char *file) {
    FILE *f = fopen(file, "rb");
    char *text = NULL;
    size_t n = 0;
    if (f) {
        FILE *mem = open_memstream(&text, &n);
        char buf[65536];
        size_t got;
        while (mem && (got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, mem);
        if (mem) fclose(mem);
        fclose(f);
    }
    if (!text) {
        fprintf(ctx->out, "FAIL %s: cannot read the file\n", file);
        ctx->failed++;
        return 1;
    }
    int failed = api_run_text(ctx, text, file);
    free(text);
    return failed;
}

#endif
