/* api_reduce_input.c — the input of /v1/reduce and /v1/scan in each of its forms: a JSON "data" list
 * (read in place where it can be), "data_b64", a raw application/octet-stream body (its fields as query
 * arguments; streamed into the device while it arrives), generated on the device ("generate"), and the
 * offsets of segmented_reduce. The "buffer" form is the handler's (api_reduce.c). Owns: a request's
 * reduce_input, until reduce_input_free. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_reduce_impl.h"
#include "jsonval.h"
#include "util/base64.h"
#include "util/json.h"

/* Query arguments of a raw body, and how each becomes JSON. */
static const struct {
    const char *name;
    char kind; /* 's' string, 'n' number, 'b' bool, 'v' a value (number when it reads as one) */
} query_fields[] = {{"family", 's'}, {"type", 's'},       {"op", 's'},        {"strategy", 's'},  {"block", 'n'},
                    {"width", 'n'},  {"accumulate", 's'}, {"exclusive", 'b'}, {"inclusive", 'b'}, {"init", 'v'},
                    {"radius", 'n'}, {"backend", 's'},    {"check", 'b'},     {"output", 's'},    {"compile", 'b'},
                    {"device", 'n'}, {"profile", 'b'},    {"map", 's'},       {"ddof", 'n'},      {"bins", 'n'},
                    {"range", 's'}};

void reduce_input_free(wp_app *app, reduce_input *in) {
    free(in->host);
    free(in->offsets_host);
    if (in->in_owned) wp_buf_free(in->in);
    if (in->held) wp_buffers_release(app->buffers, in->held);
    wp_region_put(in->region);
}

/* The raw body's query arguments as a JSON object, so one path reads every form. */
cJSON *reduce_query_object(const wp_req *req, wp_err *err) {
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < WP_ARRAY_LEN(query_fields); i++) {
        const char *v = wp_req_query(req, query_fields[i].name);
        if (!v) continue;
        char *end = NULL;
        double d = strtod(v, &end);
        bool number = *v && end && !*end;
        switch (query_fields[i].kind) {
        case 'n':
            if (!number) {
                WP_FAIL(err, 400, "wrong_type", query_fields[i].name, "?%s must be a number", query_fields[i].name);
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddNumberToObject(o, query_fields[i].name, d);
            break;
        case 'b':
            cJSON_AddBoolToObject(o, query_fields[i].name, !strcmp(v, "true") || !strcmp(v, "1"));
            break;
        case 'v':
            if (number && strchr(v, '.') == NULL && fabs(d) > 9007199254740992.0)
                cJSON_AddStringToObject(o, query_fields[i].name, v); /* a 64-bit integer keeps its digits */
            else if (number)
                cJSON_AddNumberToObject(o, query_fields[i].name, d);
            else
                cJSON_AddStringToObject(o, query_fields[i].name, v);
            break;
        default:
            cJSON_AddStringToObject(o, query_fields[i].name, v);
            break;
        }
    }
    if (!o) WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    return o;
}

int reduce_check_count(wp_app *app, uint64_t n, const char *field, wp_err *err) {
    if (n > app->max_elements)
        return WP_FAIL(err, 413, "too_many_elements", field,
                       "%llu elements; this server takes at most %llu (--max-elements)", (unsigned long long)n,
                       (unsigned long long)app->max_elements);
    return 0;
}

/* ---- inputs ---- */

int reduce_input_json(wp_app *app, const cJSON *data, wp_type t, reduce_input *in, wp_err *err) {
    if (!cJSON_IsArray(data)) return WP_FAIL(err, 400, "wrong_type", "data", "data must be a list of values");
    in->count = (uint64_t)cJSON_GetArraySize(data);
    if (reduce_check_count(app, in->count, "data", err)) return -1;
    size_t esize = wp_type_size(t);
    in->host = malloc(in->count ? (size_t)in->count * esize : 1);
    if (!in->host) return WP_FAIL(err, 500, "out_of_memory", "data", "out of memory");
    uint64_t i = 0;
    for (const cJSON *v = data->child; v; v = v->next, i++) {
        uint64_t bits;
        if (cJSON_IsNumber(v) && t == WP_F32) { /* the common case, without the general path's checks */
            wp_data_store(t, in->host, i, wp_f32_bits((float)v->valuedouble));
            continue;
        }
        char field[40];
        snprintf(field, sizeof field, "data[%llu]", (unsigned long long)i);
        if (wp_json_to_bits(v, t, field, &bits, err)) return -1;
        wp_data_store(t, in->host, i, bits);
    }
    in->form = FORM_JSON;
    return 0;
}

/* ---- "data" read in place (jsonval.h): no cJSON node per value ----
 * cJSON builds a node per value, then each is converted: about 60 MB/s of JSON text. Instead the
 * top-level "data" list is found and read straight into its packed host copy, as the type the body
 * names before it (f32 when none does), and only the rest of the body — the list replaced by [] —
 * goes through cJSON. The values, and every error, are what the cJSON path gives: what the scanner
 * does not follow exactly (objects, literals, escapes, a value the type refuses, bad JSON) it declines,
 * and the whole body goes through cJSON as before. */

/* Reads text[0..n) (a list) as type t into a new fd->host, of the values' size. */
static bool fast_scan(fast_data *fd, const char *text, size_t n, wp_type t) {
    size_t used;
    void *host = NULL;
    free(fd->host);
    fd->type = t;
    const bool ok = wp_json_scan_array_new(text, n, t, &host, &fd->count, &used);
    fd->host = host;
    if (ok) fd->to = fd->from + used;
    return ok;
}

/* The body parsed with its "data" list read in place, or NULL (nothing set) when the scanner declines
 * or the rest does not parse: the caller then parses the whole body, which gives the error. */
cJSON *reduce_parse_fast(wp_app *app, const wp_req *req, fast_data *fd) {
    size_t at;
    char hint[16];
    if (!req->body || !wp_json_find_top_key(req->body, req->body_len, "data", "type", &at, hint, sizeof hint) ||
        at >= req->body_len || req->body[at] != '[')
        return NULL;
    int ty = wp_type_parse(hint);
    fd->from = at;
    cJSON *body = NULL;
    char *text = NULL;
    if (fast_scan(fd, req->body + at, req->body_len - at, ty >= 0 ? (wp_type)ty : WP_F32)) {
        size_t rest = req->body_len - (fd->to - fd->from) + 2;
        if ((text = malloc(rest + 1))) {
            memcpy(text, req->body, fd->from);
            memcpy(text + fd->from, "[]", 2);
            memcpy(text + fd->from + 2, req->body + fd->to, req->body_len - fd->to);
            text[rest] = 0;
            wp_req sub = *req;
            sub.body = text;
            sub.body_len = rest;
            wp_err ignored = {0};
            body = wp_api_parse_body(app, &sub, &ignored);
        }
    }
    free(text);
    if (!body) {
        free(fd->host);
        memset(fd, 0, sizeof *fd);
        return NULL;
    }
    fd->on = true;
    return body;
}

/* The data step of a body parsed by reduce_parse_fast. */
int reduce_input_fast(wp_app *app, const wp_req *req, fast_data *fd, wp_type t, reduce_input *in, wp_err *err) {
    if (fd->type != t && !fast_scan(fd, req->body + fd->from, fd->to - fd->from, t)) {
        /* read as another type ("type" after "data"); a value this one refuses: let cJSON name it */
        cJSON *list = cJSON_ParseWithLength(req->body + fd->from, fd->to - fd->from);
        int rc = list ? reduce_input_json(app, list, t, in, err)
                      : WP_FAIL(err, 500, "internal", "data", "data was read once and is no longer a list");
        cJSON_Delete(list);
        return rc;
    }
    if (reduce_check_count(app, fd->count, "data", err)) return -1;
    in->host = fd->host;
    fd->host = NULL;
    in->count = fd->count;
    in->form = FORM_JSON;
    return 0;
}

int reduce_input_b64(wp_app *app, const cJSON *data, wp_type t, reduce_input *in, wp_err *err) {
    if (!cJSON_IsString(data)) return WP_FAIL(err, 400, "wrong_type", "data_b64", "data_b64 must be a string");
    size_t len = 0, esize = wp_type_size(t);
    if (wp_b64_check(data->valuestring, strlen(data->valuestring), "data_b64", &len, err)) return -1;
    if (len % esize)
        return WP_FAIL(err, 400, "bad_length", "data_b64", "data_b64 holds %zu bytes, not a multiple of %zu (%s)", len,
                       esize, wp_type_name(t));
    in->count = len / esize;
    if (reduce_check_count(app, in->count, "data_b64", err)) return -1;
    in->host = malloc(len ? len : 1);
    if (!in->host) return WP_FAIL(err, 500, "out_of_memory", "data_b64", "out of memory");
    wp_b64_decode(data->valuestring, in->host, len);
    in->form = FORM_B64;
    return 0;
}

/* ---- a raw body streamed into the job's input buffer while it arrives (http.h stream hooks) ---- */

int reduce_raw_length(wp_app *app, uint64_t bytes, wp_type t, wp_err *err) {
    size_t esize = wp_type_size(t);
    if (bytes % esize)
        return WP_FAIL(err, 400, "bad_length", "body", "the body holds %llu bytes, not a multiple of %zu (%s)",
                       (unsigned long long)bytes, esize, wp_type_name(t));
    return reduce_check_count(app, bytes / esize, "body", err);
}

int reduce_input_raw(wp_app *app, const wp_req *req, wp_type t, wp_backend *be, reduce_input *in, wp_err *err) {
    size_t esize = wp_type_size(t);
    if (reduce_raw_length(app, req->body_len, t, err)) return -1;
    in->count = req->body_len / esize;
    in->form = FORM_RAW;
    if (req->sink) { /* already on its way to the device: wait for the last copies */
        raw_sink *rs = req->sink;
        if (rs->type != t || rs->be != be || wp_buf_size(rs->buf) != req->body_len)
            return WP_FAIL(err, 500, "internal", "body", "the body was streamed for another job");
        if (wp_buf_stream_end(rs->up, err)) return -1;
        in->in = rs->buf; /* the sink's: freed when the request is over */
        in->upload_us = wp_buf_stream_wait_us(rs->up);
        return 0;
    }
    static const uint8_t empty[8];
    in->data = req->body_len ? (const uint8_t *)req->body : empty; /* uploaded straight from the body */
    return 0;
}

/* "shm": a region of the caller's (api_shm.c). A small input, or any on a backend that works on host
 * memory, is copied to the host and goes with the job like inline data (batched on cuda); a large one
 * on a GPU goes straight into a device buffer, by DMA from a registered region. 1: defer (a large one
 * asked on the HTTP thread). */
int reduce_input_shm(wp_app *app, const wp_req *req, const cJSON *shm, wp_type t, wp_backend *be, bool inline_run,
                     reduce_input *in, wp_err *err) {
    uint64_t offset = 0, count = 0;
    if (!(in->region = wp_api_shm_input(app, req, shm, t, &offset, &count, err)) ||
        reduce_check_count(app, count, "shm.count", err))
        return -1;
    const size_t bytes = (size_t)count * wp_type_size(t);
    if (inline_run && bytes > WP_REDUCE_INLINE_MAX) return 1;
    in->count = count;
    in->form = FORM_SHM;
    const uint64_t t0 = wp_now_ns();
    if (bytes <= WP_REDUCE_INLINE_MAX || wp_backend_on_host(be)) {
        if (!(in->host = malloc(bytes ? bytes : 1))) return WP_FAIL(err, 500, "out_of_memory", "shm", "out of memory");
        return wp_region_read(in->region, offset, in->host, bytes, "shm.id", err);
    }
    if (!(in->in = wp_buf_alloc(be, bytes, err))) return -1;
    in->in_owned = true;
    if (wp_region_to_buf(in->region, offset, in->in, 0, bytes, "shm.id", err)) return -1;
    in->upload_us = wp_us_since(t0);
    return 0;
}

static const char *const gen_kinds[] = {
    [WP_GEN_IOTA] = "iota", [WP_GEN_RANDOM] = "random", [WP_GEN_CONSTANT] = "constant"};

/* "generate": made on the backend by the generate family (the same values the emulator makes).
 * inline_run (on the HTTP thread): returns 1, having done nothing, for more than WP_REDUCE_INLINE_MAX
 * bytes or a generate kernel that is not in the memory cache. */
int reduce_input_generate(wp_app *app, wp_backend *be, const cJSON *g, wp_type t, bool inline_run, reduce_input *in,
                          wp_err *err) {
    static const char *const fields[] = {"kind", "n", "seed", "value", NULL};
    if (!cJSON_IsObject(g)) return WP_FAIL(err, 400, "wrong_type", "generate", "generate must be an object");
    if (wp_json_only(g, "generate.", fields, err)) return -1;
    const cJSON *kind = wp_json_get(g, "kind");
    int k = -1;
    for (int i = 0; kind && cJSON_IsString(kind) && i < (int)WP_ARRAY_LEN(gen_kinds); i++)
        if (!strcmp(kind->valuestring, gen_kinds[i])) k = i;
    if (k < 0) return WP_FAIL(err, 400, "bad_value", "generate.kind", "generate.kind must be iota, random or constant");
    const cJSON *nv = wp_json_get(g, "n");
    if (!nv) return WP_FAIL(err, 400, "missing_field", "generate.n", "generate.n is required");
    if (!cJSON_IsNumber(nv) || nv->valuedouble < 0 || nv->valuedouble != floor(nv->valuedouble) ||
        nv->valuedouble > 1e15)
        return WP_FAIL(err, 400, "bad_value", "generate.n", "generate.n must be a whole number");
    in->count = (uint64_t)nv->valuedouble;
    if (reduce_check_count(app, in->count, "generate.n", err)) return -1;
    if (wp_app_emu_limit(app, be, in->count, "generate.n", err)) return -1;
    if (inline_run && in->count * wp_type_size(t) > WP_REDUCE_INLINE_MAX) return 1;
    wp_reduce_job job = {.n = in->count, .gen_kind = k, .seed = 1, .memory_only = inline_run};
    long long seed;
    const cJSON *sv = wp_json_get(g, "seed");
    if (sv && wp_json_int(sv, "generate.seed", 0, 9007199254740991LL, &seed, err)) return -1;
    if (sv) job.seed = (uint64_t)seed;
    const cJSON *value = wp_json_get(g, "value");
    if (k == WP_GEN_CONSTANT && !value)
        return WP_FAIL(err, 400, "missing_field", "generate.value", "generate.value is required for constant");
    if (value && wp_json_to_bits(value, t, "generate.value", &job.constant, err)) return -1;

    wp_spec spec = {.family = wp_family_find("generate"), .type = t, .width = 32, .mask = 0xffffffffu};
    spec.data.strategy = WP_STRAT_AUTO;
    snprintf(spec.arch, sizeof spec.arch, "%s", app->arch);
    if (wp_spec_validate(&spec, err)) return -1;
    job.spec = &spec;
    uint64_t t0 = wp_now_ns();
    wp_reduce_result r;
    int rc = wp_reduce_run(app, be, &job, &r, err);
    if (rc) return rc;
    in->in = r.out;
    in->in_owned = true;
    in->generate_us = wp_us_since(t0);
    in->form = FORM_GENERATE;
    return 0;
}

/* segmented_reduce: "offsets" [o0, o1, ..., og], non-decreasing, og <= n, as uint64. */
int reduce_input_offsets(const cJSON *list, reduce_input *in, wp_err *err) {
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1)
        return WP_FAIL(err, 400, "bad_offsets", "offsets", "segmented_reduce needs \"offsets\": a list of g+1 indexes");
    int k = cJSON_GetArraySize(list);
    in->groups = (uint64_t)k - 1;
    in->offsets_host = malloc((size_t)k * sizeof(uint64_t));
    if (!in->offsets_host) return WP_FAIL(err, 500, "out_of_memory", "offsets", "out of memory");
    int i = 0;
    for (const cJSON *v = list->child; v; v = v->next, i++) {
        char field[32];
        snprintf(field, sizeof field, "offsets[%d]", i);
        long long o;
        if (wp_json_int(v, field, 0, (long long)in->count, &o, err)) return -1;
        if (i && (uint64_t)o < in->offsets_host[i - 1])
            return WP_FAIL(err, 400, "bad_offsets", field, "offsets must not decrease");
        in->offsets_host[i] = (uint64_t)o;
    }
    return 0; /* uploaded with the job (batch_exec.h) */
}

/* ---- the buffer form ---- */

/* "buffer": the registry's buffer (held until the request is over); its type is the job's. */
int reduce_buffer_lookup(wp_app *app, reduce_req *q) {
    if (!cJSON_IsString(q->bufid)) return WP_FAIL(&q->err, 400, "wrong_type", "buffer", "buffer must be an id string");
    if (!(q->in.held = wp_buffers_get(app->buffers, q->req->user, q->bufid->valuestring, &q->binfo, &q->err)))
        return -1;
    const cJSON *ty = wp_json_get(q->body, "type");
    if (!ty)
        q->type_default = wp_type_name(q->binfo.type);
    else if (!cJSON_IsString(ty) || wp_type_parse(ty->valuestring) != (int)q->binfo.type)
        return WP_FAIL(&q->err, 400, "type_mismatch", "type", "buffer %s holds %s", q->binfo.id,
                       wp_type_name(q->binfo.type));
    return 0;
}

/* The buffer form's input: the buffer's backend (a "device" pin naming another device is 400
 * device_mismatch, placement.h), and its first "count" elements (all by default).
 * Returns 1 (defer) for a large one on the HTTP thread. */
int reduce_input_buffer(wp_app *app, reduce_req *q) {
    int pinned;
    if (wp_placement_pin(q->body, &pinned, &q->err) || !(q->be = wp_placement_pick(app, q->in.held, pinned, &q->err)))
        return -1;
    const cJSON *bw = wp_json_get(q->body, "backend");
    if (bw &&
        (!cJSON_IsString(bw) || (strcmp(bw->valuestring, "auto") && strcmp(bw->valuestring, wp_backend_name(q->be)))))
        return WP_FAIL(&q->err, 400, "backend_mismatch", "backend", "buffer %s lives on %s", q->binfo.id,
                       wp_backend_name(q->be));
    q->in.in = q->in.held;
    q->in.count = q->binfo.count;
    q->in.form = FORM_BUFFER;
    const cJSON *cnt = wp_json_get(q->body, "count");
    long long c;
    if (cnt && wp_json_int(cnt, "count", 0, (long long)q->binfo.count, &c, &q->err)) return -1;
    if (cnt) q->in.count = (uint64_t)c;
    if (reduce_check_count(app, q->in.count, "buffer", &q->err)) return -1;
    /* On a GPU the data is there already: a large reduction to one value uploads and downloads nothing, so
     * it may run on the HTTP thread as a small job does (parse_job asks wp_app_may_run_inline next: only
     * while the device is idle). The emulator works on the CPU, and an array result is large too: those
     * go to a worker. */
    const bool one_value = q->f->data_out == WP_DATA_VALUE || q->f->data_out == WP_DATA_ARG;
    return q->inline_run && (wp_backend_on_host(q->be) || !one_value) &&
           q->in.count * wp_type_size(q->spec.type) > WP_REDUCE_INLINE_MAX;
}
