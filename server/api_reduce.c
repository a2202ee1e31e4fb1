/* api_reduce.c — POST /v1/reduce and POST /v1/scan: the data-parallel families over data given
 * inline ("data"), as base64 ("data_b64", little-endian), as a raw application/octet-stream body
 * (fields as query arguments: ?type=f32&op=max...), by "buffer" id (/v1/buffers), or generated on the
 * device ("generate": {"kind": "iota"|"random"|"constant", "n", "seed", "value"}). The engine
 * (reduce.c) runs the job; this file turns requests into jobs and results into responses.
 *
 *   /v1/reduce: device_reduce (default), warp_reduce, block_reduce, argmin, argmax, segmented_reduce
 *   /v1/scan:   device_scan (default), warp_scan, block_scan, stencil
 *
 * One value comes back as "value" (64-bit integers and NaN as strings, jsonval.h); arrays (scans,
 * per-group results) come back in the form the data came in — "data" for JSON, "data_b64" for base64,
 * raw bytes with Accept: application/octet-stream — or, with "output":"buffer", into a new buffer.
 * "check": true adds a float64 (integers: exact) CPU reference and the error against it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "base64.h"
#include "jsonval.h"

#define WP_REDUCE_JSON_MAX (1u << 22)    /* elements a JSON result may hold; more: base64, raw or a buffer */
#define WP_REDUCE_INLINE_MAX (64u << 10) /* bytes of input (or of body) a job may have to run on the HTTP thread */

typedef enum { FORM_JSON, FORM_B64, FORM_RAW, FORM_BUFFER, FORM_GENERATE } data_form;

static const char *const reduce_families[] = {"device_reduce",    "warp_reduce", "block_reduce", "argmin", "argmax",
                                              "segmented_reduce", NULL};
static const char *const scan_families[] = {"device_scan", "warp_scan", "block_scan", "stencil", NULL};

static const char *const body_fields[] = {"family",     "type",      "op",        "strategy", "block",  "width",
                                          "accumulate", "exclusive", "inclusive", "init",     "radius", "weights",
                                          "offsets",    "backend",   "data",      "data_b64", "buffer", "generate",
                                          "check",      "output",    "compile",   "count",    "device", NULL};

/* Query arguments of a raw body, and how each becomes JSON. */
static const struct {
    const char *name;
    char kind; /* 's' string, 'n' number, 'b' bool, 'v' a value (number when it reads as one) */
} query_fields[] = {{"family", 's'},    {"type", 's'},   {"op", 's'},         {"strategy", 's'},
                    {"block", 'n'},     {"width", 'n'},  {"accumulate", 's'}, {"exclusive", 'b'},
                    {"inclusive", 'b'}, {"init", 'v'},   {"radius", 'n'},     {"backend", 's'},
                    {"check", 'b'},     {"output", 's'}, {"compile", 'b'},    {"device", 'n'}};

typedef struct {
    data_form form;
    const uint8_t *data; /* packed input on the host: host, or the raw body itself (no copy) */
    uint8_t *host;       /* owned copy (JSON, base64; buffer/generate only for check) */
    uint64_t count;
    wp_buf *in; /* the job's input */
    bool in_owned;
    wp_buf *held; /* from wp_buffers_get, released at the end */
    wp_buf *offsets;
    uint64_t *offsets_host;
    uint64_t groups;
    double upload_us, generate_us;
} reduce_input;

static void input_free(wp_app *app, reduce_input *in) {
    free(in->host);
    free(in->offsets_host);
    if (in->in_owned) wp_buf_free(in->in);
    if (in->held) wp_buffers_release(app->buffers, in->held);
    wp_buf_free(in->offsets);
}

static bool is_octet_stream(const char *s) {
    return s && !strncmp(s, "application/octet-stream", 24) && (!s[24] || s[24] == ';' || s[24] == ' ');
}

static bool listed(const char *const *names, const char *name) {
    for (; *names; names++)
        if (!strcmp(*names, name)) return true;
    return false;
}

/* The raw body's query arguments as a JSON object, so one path reads every form. */
static cJSON *query_object(const wp_req *req, wp_err *err) {
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

static int get_bool(const cJSON *body, const char *name, bool *out, wp_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    *out = false;
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return WP_FAIL(err, 400, "wrong_type", name, "%s must be true or false", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int check_count(wp_app *app, uint64_t n, const char *field, wp_err *err) {
    if (n > app->max_elements)
        return WP_FAIL(err, 413, "too_many_elements", field,
                       "%llu elements; this server takes at most %llu (--max-elements)", (unsigned long long)n,
                       (unsigned long long)app->max_elements);
    return 0;
}

/* ---- inputs ---- */

static int upload(wp_backend *be, reduce_input *in, size_t esize, wp_err *err) {
    uint64_t t0 = wp_now_ns();
    in->in = wp_buf_alloc(be, (size_t)in->count * esize, err);
    if (!in->in) return -1;
    in->in_owned = true;
    if (wp_buf_write(in->in, 0, in->data, (size_t)in->count * esize, err)) return -1;
    in->upload_us = wp_us_since(t0);
    return 0;
}

static int input_json(wp_app *app, const cJSON *data, wp_type t, reduce_input *in, wp_err *err) {
    if (!cJSON_IsArray(data)) return WP_FAIL(err, 400, "wrong_type", "data", "data must be a list of values");
    in->count = (uint64_t)cJSON_GetArraySize(data);
    if (check_count(app, in->count, "data", err)) return -1;
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

typedef struct {
    bool on;         /* "data" was read in place; the parsed body holds [] in its place */
    size_t from, to; /* the list's bytes in the request body */
    wp_type type;    /* the type it was read as */
    uint8_t *host;   /* its values, packed */
    uint64_t count;
} fast_data;

/* Reads text[0..n) (a list) as type t into a new fd->host. */
static bool fast_scan(fast_data *fd, const char *text, size_t n, wp_type t) {
    uint64_t cap = wp_json_array_cap(n);
    size_t used;
    free(fd->host);
    fd->type = t;
    fd->host = malloc((size_t)cap * wp_type_size(t));
    if (!fd->host || !wp_json_scan_array(text, n, t, fd->host, cap, &fd->count, &used)) return false;
    fd->to = fd->from + used;
    uint8_t *fit = realloc(fd->host, fd->count ? (size_t)fd->count * wp_type_size(t) : 1); /* give back the slack */
    if (fit) fd->host = fit;
    return true;
}

/* The body parsed with its "data" list read in place, or NULL (nothing set) when the scanner declines
 * or the rest does not parse: the caller then parses the whole body, which gives the error. */
static cJSON *parse_fast(wp_app *app, const wp_req *req, fast_data *fd) {
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
            body = wp_app_parse_body(app, &sub, &ignored);
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

/* The data step of a body parsed by parse_fast. */
static int input_fast(wp_app *app, const wp_req *req, fast_data *fd, wp_type t, reduce_input *in, wp_err *err) {
    if (fd->type != t && !fast_scan(fd, req->body + fd->from, fd->to - fd->from, t)) {
        /* read as another type ("type" after "data"); a value this one refuses: let cJSON name it */
        cJSON *list = cJSON_ParseWithLength(req->body + fd->from, fd->to - fd->from);
        int rc = list ? input_json(app, list, t, in, err)
                      : WP_FAIL(err, 500, "internal", "data", "data was read once and is no longer a list");
        cJSON_Delete(list);
        return rc;
    }
    if (check_count(app, fd->count, "data", err)) return -1;
    in->host = fd->host;
    fd->host = NULL;
    in->count = fd->count;
    in->form = FORM_JSON;
    return 0;
}

static int input_b64(wp_app *app, const cJSON *data, wp_type t, reduce_input *in, wp_err *err) {
    if (!cJSON_IsString(data)) return WP_FAIL(err, 400, "wrong_type", "data_b64", "data_b64 must be a string");
    size_t len = 0, esize = wp_type_size(t);
    if (wp_b64_check(data->valuestring, strlen(data->valuestring), "data_b64", &len, err)) return -1;
    if (len % esize)
        return WP_FAIL(err, 400, "bad_length", "data_b64", "data_b64 holds %zu bytes, not a multiple of %zu (%s)", len,
                       esize, wp_type_name(t));
    in->count = len / esize;
    if (check_count(app, in->count, "data_b64", err)) return -1;
    in->host = malloc(len ? len : 1);
    if (!in->host) return WP_FAIL(err, 500, "out_of_memory", "data_b64", "out of memory");
    wp_b64_decode(data->valuestring, in->host, len);
    in->form = FORM_B64;
    return 0;
}

/* ---- a raw body streamed into the job's input buffer while it arrives (http.h stream hooks) ---- */

typedef struct {
    wp_app *app;
    wp_type type;      /* the job's, from the query */
    wp_backend *be;    /* where it runs */
    wp_buf *buf;       /* the input: the whole body */
    wp_buf_stream *up; /* filling buf */
} raw_sink;

static int raw_length(wp_app *app, uint64_t bytes, wp_type t, wp_err *err) {
    size_t esize = wp_type_size(t);
    if (bytes % esize)
        return WP_FAIL(err, 400, "bad_length", "body", "the body holds %llu bytes, not a multiple of %zu (%s)",
                       (unsigned long long)bytes, esize, wp_type_name(t));
    return check_count(app, bytes / esize, "body", err);
}

static int input_raw(wp_app *app, const wp_req *req, wp_type t, wp_backend *be, reduce_input *in, wp_err *err) {
    size_t esize = wp_type_size(t);
    if (raw_length(app, req->body_len, t, err)) return -1;
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

static const char *const gen_kinds[] = {
    [WP_GEN_IOTA] = "iota", [WP_GEN_RANDOM] = "random", [WP_GEN_CONSTANT] = "constant"};

/* "generate": made on the backend by the generate family (the same values the emulator makes).
 * inline_run (on the HTTP thread): returns 1, having done nothing, for more than WP_REDUCE_INLINE_MAX
 * bytes or a generate kernel that is not in the memory cache. */
static int input_generate(wp_app *app, wp_backend *be, const cJSON *g, wp_type t, bool inline_run, reduce_input *in,
                          wp_err *err) {
    static const char *const fields[] = {"kind", "n", "seed", "value", NULL};
    if (!cJSON_IsObject(g)) return WP_FAIL(err, 400, "wrong_type", "generate", "generate must be an object");
    if (wp_json_only(g, "generate.", fields, err)) return -1;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(g, "kind");
    int k = -1;
    for (int i = 0; kind && cJSON_IsString(kind) && i < (int)WP_ARRAY_LEN(gen_kinds); i++)
        if (!strcmp(kind->valuestring, gen_kinds[i])) k = i;
    if (k < 0) return WP_FAIL(err, 400, "bad_value", "generate.kind", "generate.kind must be iota, random or constant");
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(g, "n");
    if (!nv) return WP_FAIL(err, 400, "missing_field", "generate.n", "generate.n is required");
    if (!cJSON_IsNumber(nv) || nv->valuedouble < 0 || nv->valuedouble != floor(nv->valuedouble) ||
        nv->valuedouble > 1e15)
        return WP_FAIL(err, 400, "bad_value", "generate.n", "generate.n must be a whole number");
    in->count = (uint64_t)nv->valuedouble;
    if (check_count(app, in->count, "generate.n", err)) return -1;
    if (inline_run && in->count * wp_type_size(t) > WP_REDUCE_INLINE_MAX) return 1;
    wp_reduce_job job = {.n = in->count, .gen_kind = k, .seed = 1, .memory_only = inline_run};
    long long seed;
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(g, "seed");
    if (sv && wp_json_int(sv, "generate.seed", 0, 9007199254740991LL, &seed, err)) return -1;
    if (sv) job.seed = (uint64_t)seed;
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(g, "value");
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

/* segmented_reduce: "offsets" [o0, o1, ..., og], non-decreasing, og <= n, uploaded as uint64. */
static int input_offsets(wp_backend *be, const cJSON *list, reduce_input *in, wp_err *err) {
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
    in->offsets = wp_buf_alloc(be, (size_t)k * sizeof(uint64_t), err);
    return in->offsets ? wp_buf_write(in->offsets, 0, in->offsets_host, (size_t)k * sizeof(uint64_t), err) : -1;
}

/* ---- the float64 (integers: exact) reference of "check" ---- */

static bool check_in_f64(wp_type t) { return wp_type_is_float(t); }

/* op over double values (floats) or exactly in the type (integers): raw bits in and out. */
static uint64_t ref_op(const wp_spec *s, uint64_t a, uint64_t b) {
    return wp_op_apply(&s->op, check_in_f64(s->type) ? WP_F64 : s->type, a, b);
}
static uint64_t ref_elem(const wp_spec *s, const uint8_t *host, uint64_t i) {
    uint64_t x = wp_data_load(s->type, host, i);
    return check_in_f64(s->type) ? wp_f64_bits(wp_value_to_double(s->type, x)) : x;
}

typedef struct {
    double max_abs, max_rel;
    uint64_t mismatches; /* integers: results that differ from the exact reference */
} ref_error;

static void ref_compare(const wp_spec *s, wp_type got_type, uint64_t got, uint64_t ref, ref_error *e) {
    if (!check_in_f64(s->type)) {
        if ((got & wp_type_bitmask(s->type)) != ref) e->mismatches++;
        return;
    }
    double g = wp_value_to_double(got_type, got), r = wp_bits_f64(ref);
    if (isnan(g) && isnan(r)) return;
    double abs_err = fabs(g - r), rel = r != 0 ? abs_err / fabs(r) : abs_err;
    if (isnan(abs_err)) abs_err = rel = INFINITY;
    if (abs_err > e->max_abs) e->max_abs = abs_err;
    if (rel > e->max_rel) e->max_rel = rel;
}

static void ref_error_json(cJSON *o, const wp_spec *s, const ref_error *e) {
    if (check_in_f64(s->type)) {
        cJSON_AddNumberToObject(o, "max_abs_error", e->max_abs);
        cJSON_AddNumberToObject(o, "max_rel_error", e->max_rel);
    } else {
        cJSON_AddNumberToObject(o, "mismatches", (double)e->mismatches);
    }
}

/* A sequential fold of elements [from, to) (to > from). */
static uint64_t ref_fold(const wp_spec *s, const uint8_t *host, uint64_t from, uint64_t to) {
    uint64_t acc = ref_elem(s, host, from);
    for (uint64_t i = from + 1; i < to; i++) acc = ref_op(s, acc, ref_elem(s, host, i));
    return acc;
}

static cJSON *check_value(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r) {
    cJSON *o = cJSON_CreateObject();
    if (!n || !r->has_value) {
        cJSON_AddStringToObject(o, "note", "no elements: the value is the identity");
        return o;
    }
    uint64_t ref = ref_fold(s, host, 0, n);
    ref_error e = {0};
    ref_compare(s, r->acc_type, check_in_f64(s->type) ? r->acc_value : r->value, ref, &e);
    if (check_in_f64(s->type)) {
        cJSON_AddItemToObject(o, "reference", wp_json_from_bits(WP_F64, ref));
        cJSON_AddNumberToObject(o, "abs_error", e.max_abs);
        cJSON_AddNumberToObject(o, "rel_error", e.max_rel);
    } else {
        cJSON_AddItemToObject(o, "reference", wp_json_from_bits(s->type, ref));
        cJSON_AddBoolToObject(o, "exact", e.mismatches == 0);
    }
    return o;
}

static cJSON *check_arg(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r) {
    cJSON *o = cJSON_CreateObject();
    bool max = !strcmp(s->family->name, "argmax");
    int64_t best = -1;
    for (uint64_t i = 0; i < n; i++) {
        double x = wp_value_to_double(s->type, wp_data_load(s->type, host, i));
        if (best < 0) {
            best = (int64_t)i;
            continue;
        }
        double b = wp_value_to_double(s->type, wp_data_load(s->type, host, (uint64_t)best));
        bool better = isnan(b) ? !isnan(x) : (!isnan(x) && (max ? x > b : x < b));
        if (wp_type_is_int(s->type)) { /* exact: 64-bit integers do not fit a double */
            int c = wp_value_cmp(s->type, wp_data_load(s->type, host, i), wp_data_load(s->type, host, (uint64_t)best));
            better = max ? c > 0 : c < 0;
        }
        if (better) best = (int64_t)i;
    }
    cJSON_AddNumberToObject(o, "reference_index", (double)best);
    cJSON_AddBoolToObject(o, "match", best == r->index);
    return o;
}

/* Per-element reference of the array families (scans, per-group reductions, stencil). */
static cJSON *check_array(const wp_spec *s, const uint8_t *host, uint64_t n, const uint8_t *out, uint64_t out_count,
                          const reduce_input *in, bool has_init, uint64_t init) {
    const wp_family *f = s->family;
    ref_error e = {0};
    wp_type t = s->type;
    if (f->flags & WP_F_RADIUS) {
        int r = s->data.radius;
        for (uint64_t i = 0; i < n; i++) {
            double sum = 0;
            if (i >= (uint64_t)r && i + (uint64_t)r < n)
                for (int k = -r; k <= r; k++)
                    sum += wp_value_to_double(t, wp_data_load(t, host, i + (uint64_t)k)) / (2 * r + 1);
            ref_compare(s, t, wp_data_load(t, out, i), wp_f64_bits(sum), &e);
        }
    } else if (f->data_out == WP_DATA_GROUPS) {
        uint64_t group = (f->flags & WP_F_WIDTH_GROUP) ? (uint64_t)s->width : (uint64_t)s->data.block;
        for (uint64_t g = 0; g < out_count; g++) {
            uint64_t from = in->offsets_host ? in->offsets_host[g] : g * group;
            uint64_t to = in->offsets_host ? in->offsets_host[g + 1] : (from + group < n ? from + group : n);
            if (to > from) ref_compare(s, t, wp_data_load(t, out, g), ref_fold(s, host, from, to), &e);
        }
    } else { /* scans: each group (the whole array for device_scan) from its start */
        uint64_t group = (f->flags & WP_F_WIDTH_GROUP)   ? (uint64_t)s->width
                         : (f->flags & WP_F_BLOCK_GROUP) ? (uint64_t)s->data.block
                                                         : (n ? n : 1);
        uint64_t init_ref = check_in_f64(t) ? wp_f64_bits(wp_value_to_double(t, init)) : init, acc = 0;
        uint64_t ident;
        bool has_ident = wp_op_identity(&s->op, check_in_f64(t) ? WP_F64 : t, &ident);
        for (uint64_t i = 0; i < n; i++) {
            bool first = i % group == 0;
            uint64_t x = ref_elem(s, host, i), ref;
            if (s->data.exclusive) {
                ref = first ? (has_init ? init_ref : ident) : acc;
                acc = first ? (has_init ? ref_op(s, init_ref, x) : x) : ref_op(s, acc, x);
                if (first && !has_init && !has_ident) continue;
            } else {
                acc = first ? (has_init ? ref_op(s, init_ref, x) : x) : ref_op(s, acc, x);
                ref = acc;
            }
            ref_compare(s, t, wp_data_load(t, out, i), ref, &e);
        }
    }
    cJSON *o = cJSON_CreateObject();
    ref_error_json(o, s, &e);
    return o;
}

/* ---- the handler ---- */

static void add_timing(cJSON *o, const wp_req *req, const reduce_input *in, const wp_reduce_result *r, double parse_us,
                       double download_us) {
    cJSON *t = cJSON_AddObjectToObject(o, "timing");
    uint64_t t_body = req->t_body_ns ? req->t_body_ns : req->t_start_ns;
    cJSON_AddNumberToObject(t, "receive_us", (double)(t_body - req->t_start_ns) / 1e3);
    cJSON_AddNumberToObject(t, "parse_us", parse_us);
    cJSON_AddNumberToObject(t, "upload_us", in->upload_us);
    if (in->form == FORM_GENERATE) cJSON_AddNumberToObject(t, "generate_us", in->generate_us);
    cJSON_AddNumberToObject(t, "key_us", r->key_us);
    cJSON_AddNumberToObject(t, "cache_us", r->cache_us);
    cJSON_AddNumberToObject(t, "compile_ms", r->compile_ms);
    cJSON_AddNumberToObject(t, "load_us", r->load_us);
    cJSON_AddNumberToObject(t, "kernel_us", r->kernel_us);
    cJSON_AddNumberToObject(t, "download_us", download_us);
    cJSON_AddNumberToObject(t, "total_us", wp_us_since(req->t_start_ns));
}

/* What a streamed raw body needs to know before it arrives. */
typedef struct {
    wp_type type;
    wp_backend *be;
} raw_plan;

/* One request. check_only (opening a streamed raw body: no body yet): runs every check that needs no
 * data and returns true with the job's type and backend, or false with the error in resp. */
static bool handle(wp_app *app, const wp_req *req, wp_resp *resp, bool scan, raw_plan *check_only) {
    bool ok = false;
    wp_err err = {0};
    wp_spec spec = {0};
    reduce_input in = {0};
    wp_reduce_result r = {0};
    wp_buf *out_buf = NULL; /* "output":"buffer": created in the registry */
    uint8_t *out_host = NULL;
    cJSON *body = NULL, *o = NULL;
    fast_data fast = {0};
    const char *const *allowed = scan ? scan_families : reduce_families;
    bool raw = is_octet_stream(req->content_type);
    /* Called on the HTTP thread first (WP_ROUTE_TRY_INLINE): a small job whose kernel is in the memory
     * cache (on emu without "compile", none is needed) is answered there; anything else is deferred
     * to a worker before it blocks: a large body or input, a compile, a disk read. */
    const bool inline_run = req->may_defer;
    if (inline_run && req->body_len > WP_REDUCE_INLINE_MAX) goto defer;

    if (raw)
        body = query_object(req, &err);
    else if (!(body = parse_fast(app, req, &fast)))
        body = wp_app_parse_body(app, req, &err);
    if (!body) goto fail;
    if (!cJSON_IsObject(body)) {
        WP_FAIL(&err, 400, "bad_request", "", "the body must be a JSON object");
        goto fail;
    }
    if (wp_json_only(body, "", body_fields, &err)) goto fail;

    /* family: the endpoint's default, or one of its list */
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(body, "family");
    if (fam && (!cJSON_IsString(fam) || !listed(allowed, fam->valuestring))) {
        WP_FAIL(&err, 400, "bad_family", "family", "%s runs %s", scan ? "/v1/scan" : "/v1/reduce",
                scan ? "device_scan, warp_scan, block_scan or stencil"
                     : "device_reduce, warp_reduce, block_reduce, argmin, argmax or segmented_reduce");
        goto fail;
    }
    if (!fam) cJSON_AddStringToObject(body, "family", allowed[0]);
    const wp_family *f = wp_family_find(cJSON_GetObjectItemCaseSensitive(body, "family")->valuestring);

    /* which input, and for a buffer its type and backend */
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(body, "data");
    const cJSON *b64 = cJSON_GetObjectItemCaseSensitive(body, "data_b64");
    const cJSON *bufid = cJSON_GetObjectItemCaseSensitive(body, "buffer");
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(body, "generate");
    int forms = !!data + !!b64 + !!bufid + !!gen + raw;
    if (forms != 1) {
        WP_FAIL(&err, 400, forms ? "bad_request" : "missing_field", "data",
                "give exactly one of data, data_b64, buffer, generate, or a raw application/octet-stream body");
        goto fail;
    }
    wp_buffer_info binfo;
    if (bufid) {
        if (!cJSON_IsString(bufid)) {
            WP_FAIL(&err, 400, "wrong_type", "buffer", "buffer must be an id string");
            goto fail;
        }
        if (!(in.held = wp_buffers_get(app->buffers, bufid->valuestring, &binfo, &err))) goto fail;
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(body, "type");
        if (!ty)
            cJSON_AddStringToObject(body, "type", wp_type_name(binfo.type));
        else if (!cJSON_IsString(ty) || wp_type_parse(ty->valuestring) != (int)binfo.type) {
            WP_FAIL(&err, 400, "type_mismatch", "type", "buffer %s holds %s", binfo.id, wp_type_name(binfo.type));
            goto fail;
        }
    } else if (!cJSON_GetObjectItemCaseSensitive(body, "type")) {
        cJSON_AddStringToObject(body, "type", "f32");
    }
    if (f->flags & WP_F_OP && !cJSON_GetObjectItemCaseSensitive(body, "op") && raw) {
        WP_FAIL(&err, 400, "missing_field", "op", "a raw body needs ?type=...&op=...");
        goto fail;
    }
    if (wp_spec_from_json(body, app->arch, &spec, &err)) goto fail;

    wp_backend *be = NULL;
    if (in.held) {
        be = wp_buf_backend(in.held);
        const cJSON *bw = cJSON_GetObjectItemCaseSensitive(body, "backend");
        if (bw && (!cJSON_IsString(bw) ||
                   (strcmp(bw->valuestring, "auto") && strcmp(bw->valuestring, wp_backend_name(be))))) {
            WP_FAIL(&err, 400, "backend_mismatch", "backend", "buffer %s lives on %s", binfo.id, wp_backend_name(be));
            goto fail;
        }
        in.in = in.held;
        in.count = binfo.count;
        in.form = FORM_BUFFER;
        const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(body, "count");
        long long c;
        if (cnt && wp_json_int(cnt, "count", 0, (long long)binfo.count, &c, &err)) goto fail;
        if (cnt) in.count = (uint64_t)c;
        if (check_count(app, in.count, "buffer", &err)) goto fail;
        if (inline_run && in.count * wp_type_size(spec.type) > WP_REDUCE_INLINE_MAX) goto defer;
    } else if (wp_app_backend(app, body, f, &be, &err)) {
        goto fail;
    }
    if (req->sink && !in.held) be = ((raw_sink *)req->sink)->be;   /* placed when the streamed body began */
    if (inline_run && !wp_app_may_run_inline(app, be)) goto defer; /* a GPU job: to a worker before any upload */

    bool check, compile;
    if (get_bool(body, "check", &check, &err) || get_bool(body, "compile", &compile, &err)) goto fail;
    bool has_init = false;
    uint64_t init = 0;
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(body, "init");
    if (iv && !(f->flags & WP_F_SCAN)) {
        WP_FAIL(&err, 400, "unknown_field", "init", "family %s takes no init", f->name);
        goto fail;
    }
    if (iv && wp_json_to_bits(iv, spec.type, "init", &init, &err)) goto fail;
    has_init = iv != NULL;

    wp_reduce_job job = {
        .spec = &spec, .has_init = has_init, .init = init, .compile_on_emu = compile, .memory_only = inline_run};
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(body, "weights");
    if (w) {
        int want = 2 * spec.data.radius + 1, i = 0;
        if (!(f->flags & WP_F_RADIUS) || !cJSON_IsArray(w) || cJSON_GetArraySize(w) != want) {
            WP_FAIL(&err, 400, "bad_weights", "weights", "weights must be a list of 2*radius+1 = %d numbers (stencil)",
                    want);
            goto fail;
        }
        for (const cJSON *x = w->child; x; x = x->next, i++) {
            if (!cJSON_IsNumber(x)) {
                WP_FAIL(&err, 400, "bad_weights", "weights", "weights[%d] must be a number", i);
                goto fail;
            }
            job.weights[i] = x->valuedouble;
        }
        job.has_weights = true;
    }

    if (check_only) {
        check_only->type = spec.type;
        check_only->be = be;
        ok = true;
        goto done;
    }

    /* the data */
    int rc = 0;
    size_t esize = wp_type_size(spec.type);
    if (data && fast.on)
        rc = input_fast(app, req, &fast, spec.type, &in, &err);
    else if (data)
        rc = input_json(app, data, spec.type, &in, &err);
    else if (b64)
        rc = input_b64(app, b64, spec.type, &in, &err);
    else if (raw)
        rc = input_raw(app, req, spec.type, be, &in, &err);
    else if (gen)
        rc = input_generate(app, be, gen, spec.type, inline_run, &in, &err);
    if (rc == 0 && in.host) in.data = in.host;
    if (rc == 0 && in.data) rc = upload(be, &in, esize, &err);
    if (rc > 0) goto defer;
    if (rc) goto fail;
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(body, "offsets");
    if ((f->flags & WP_F_SEGMENTS) ? input_offsets(be, offs, &in, &err) != 0 : offs != NULL) {
        if (offs && !(f->flags & WP_F_SEGMENTS))
            WP_FAIL(&err, 400, "unknown_field", "offsets", "only segmented_reduce takes offsets");
        goto fail;
    }
    job.in = in.in;
    job.n = in.count;
    job.offsets = in.offsets;
    job.groups = in.groups;
    const uint64_t t_body = req->t_body_ns ? req->t_body_ns : req->t_start_ns;
    double parse_us = wp_us_since(t_body); /* from the last byte of the body */

    /* where an array result goes */
    bool array = f->data_out == WP_DATA_EACH || f->data_out == WP_DATA_GROUPS;
    data_form out_form = in.form == FORM_B64 || in.form == FORM_RAW ? FORM_B64 : FORM_JSON;
    const cJSON *outv = cJSON_GetObjectItemCaseSensitive(body, "output");
    if (outv) {
        const char *ov = cJSON_IsString(outv) ? outv->valuestring : "";
        if (!strcmp(ov, "json"))
            out_form = FORM_JSON;
        else if (!strcmp(ov, "b64"))
            out_form = FORM_B64;
        else if (!strcmp(ov, "raw"))
            out_form = FORM_RAW;
        else if (!strcmp(ov, "buffer"))
            out_form = FORM_BUFFER;
        else {
            WP_FAIL(&err, 400, "bad_value", "output", "output must be json, b64, raw or buffer");
            goto fail;
        }
    }
    if (is_octet_stream(req->accept)) out_form = FORM_RAW;
    wp_data_plan plan;
    f->plan(&spec, job.n, job.groups, &plan);
    uint64_t out_count = array ? plan.out_bytes / esize : 0;
    if (array && out_form == FORM_JSON && out_count > WP_REDUCE_JSON_MAX) {
        WP_FAIL(&err, 413, "too_many_for_json", "output",
                "%llu results are too many for JSON (at most %u): ask for output b64, raw or buffer",
                (unsigned long long)out_count, WP_REDUCE_JSON_MAX);
        goto fail;
    }
    if (array && out_form == FORM_BUFFER) {
        if (!(out_buf = wp_buffers_create_like(app->buffers, in.held, be, spec.type, out_count, &err))) goto fail;
        job.out = out_buf;
    }

    rc = wp_reduce_run(app, be, &job, &r, &err);
    if (rc > 0) goto defer;
    if (rc) goto fail;

    /* results */
    double download_us = 0;
    if (array && out_form != FORM_BUFFER) {
        out_host = malloc(plan.out_bytes ? plan.out_bytes : 1);
        if (!out_host) {
            WP_FAIL(&err, 500, "out_of_memory", "", "out of memory");
            goto fail;
        }
        uint64_t t0 = wp_now_ns();
        if (wp_buf_read(r.out, 0, out_host, plan.out_bytes, &err)) goto fail;
        download_us = wp_us_since(t0);
    }
    if (array && out_form == FORM_RAW) {
        wp_resp_bytes(resp, 200, "application/octet-stream", out_host, plan.out_bytes);
        goto done;
    }
    if (check && !in.data) { /* buffer or generated: the reference needs the data here */
        in.host = malloc((size_t)in.count * esize + 1);
        if (!in.host) {
            WP_FAIL(&err, 500, "out_of_memory", "", "out of memory");
            goto fail;
        }
        if (wp_buf_read(in.in, 0, in.host, (size_t)in.count * esize, &err)) goto fail;
        in.data = in.host;
    }
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "family", f->name);
    cJSON_AddStringToObject(o, "type", wp_type_name(spec.type));
    if (f->flags & WP_F_OP) cJSON_AddStringToObject(o, "op", spec.op.text);
    if (f->flags & WP_F_SCAN) cJSON_AddBoolToObject(o, "exclusive", spec.data.exclusive);
    if (f->flags & WP_F_WIDTH_GROUP) cJSON_AddNumberToObject(o, "width", spec.width);
    if (f->flags & WP_F_RADIUS) cJSON_AddNumberToObject(o, "radius", spec.data.radius);
    cJSON_AddNumberToObject(o, "count", (double)in.count);
    if (!in.count && f->data_out == WP_DATA_VALUE) cJSON_AddBoolToObject(o, "empty", true);
    if (f->data_out == WP_DATA_VALUE || f->data_out == WP_DATA_ARG) {
        cJSON_AddItemToObject(o, "value", r.has_value ? wp_json_from_bits(spec.type, r.value) : cJSON_CreateNull());
        if (f->data_out == WP_DATA_ARG) cJSON_AddNumberToObject(o, "index", (double)r.index);
        if (r.acc_type != spec.type && f->data_out == WP_DATA_VALUE) {
            cJSON *acc = cJSON_AddObjectToObject(o, "accumulator");
            cJSON_AddStringToObject(acc, "type", wp_type_name(r.acc_type));
            cJSON_AddItemToObject(acc, "value",
                                  r.has_value ? wp_json_from_bits(r.acc_type, r.acc_value) : cJSON_CreateNull());
        }
    } else {
        cJSON_AddNumberToObject(o, "out_count", (double)r.out_count);
        if (out_form == FORM_BUFFER) {
            wp_buffer_info info;
            wp_buf *created = out_buf;
            out_buf = NULL; /* commit frees it on failure */
            if (wp_buffers_commit(app->buffers, created, 0, &info, &err)) goto fail;
            cJSON *bo = cJSON_AddObjectToObject(o, "buffer");
            cJSON_AddStringToObject(bo, "id", info.id);
            cJSON_AddStringToObject(bo, "type", wp_type_name(info.type));
            cJSON_AddNumberToObject(bo, "count", (double)info.count);
        } else if (out_form == FORM_B64) {
            char *text = wp_b64_encode(out_host, plan.out_bytes);
            if (!text) {
                WP_FAIL(&err, 500, "out_of_memory", "", "out of memory");
                goto fail;
            }
            cJSON_AddStringToObject(o, "data_b64", text);
            free(text);
        } else {
            cJSON *list = cJSON_AddArrayToObject(o, "data");
            for (uint64_t i = 0; i < r.out_count; i++)
                cJSON_AddItemToArray(list, wp_json_from_bits(spec.type, wp_data_load(spec.type, out_host, i)));
        }
    }
    if (f->flags & WP_F_ACCUM && (spec.type == WP_F16 || spec.type == WP_BF16))
        cJSON_AddStringToObject(o, "accumulate", spec.data.native ? "native" : "f32");
    cJSON_AddStringToObject(o, "backend", wp_backend_name(be));
    cJSON_AddStringToObject(o, "device", wp_backend_facts(be)->name);
    cJSON_AddStringToObject(o, "strategy", wp_strategy_name(r.strategy));
    cJSON_AddBoolToObject(o, "deterministic", r.deterministic);
    cJSON_AddNumberToObject(o, "block", r.block);
    cJSON_AddNumberToObject(o, "grid", r.grid);
    cJSON_AddStringToObject(o, "key", r.key_text);
    if (r.hash[0]) cJSON_AddStringToObject(o, "hash", r.hash);
    cJSON_AddStringToObject(o, "cache", r.compiled ? wp_source_name(r.source) : "none");
    if (in.held) cJSON_AddStringToObject(o, "input_buffer", binfo.id);
    if (check) {
        cJSON *c = f->data_out == WP_DATA_VALUE ? check_value(&spec, in.data, in.count, &r)
                   : f->data_out == WP_DATA_ARG ? check_arg(&spec, in.data, in.count, &r)
                   : out_host ? check_array(&spec, in.data, in.count, out_host, r.out_count, &in, has_init, init)
                              : cJSON_CreateObject();
        cJSON_AddItemToObject(o, "check", c);
    }
    add_timing(o, req, &in, &r, parse_us, download_us);
    wp_resp_json(resp, 200, o);
    o = NULL;
    ok = true;
    goto done;
fail:
    wp_resp_error(resp, &err);
    goto done;
defer:
    resp->defer = true; /* http.c calls again on a worker, where nothing above is left over */
done:
    cJSON_Delete(o);
    if (out_buf) wp_buffers_abort(app->buffers, out_buf);
    free(out_host);
    wp_reduce_result_free(&r);
    input_free(app, &in);
    free(fast.host);
    wp_spec_free(&spec);
    cJSON_Delete(body);
    return ok;
}

void wp_api_reduce(void *app, const wp_req *req, wp_resp *resp) { handle(app, req, resp, false, NULL); }
void wp_api_scan(void *app, const wp_req *req, wp_resp *resp) { handle(app, req, resp, true, NULL); }

/* Opening a raw body: the job's checks, the length's, then its input buffer, filled as bytes arrive. */
static void *raw_open(wp_app *app, const wp_req *req, uint64_t length, wp_resp *resp, bool scan) {
    raw_plan plan;
    if (!handle(app, req, resp, scan, &plan)) return NULL;
    wp_err err = {0};
    raw_sink *rs = NULL;
    if (raw_length(app, length, plan.type, &err) == 0 && (rs = calloc(1, sizeof *rs)) == NULL)
        WP_FAIL(&err, 500, "out_of_memory", "", "out of memory");
    if (rs) {
        *rs = (raw_sink){.app = app, .type = plan.type, .be = plan.be};
        if ((rs->buf = wp_buf_alloc(plan.be, (size_t)length, &err)) && (rs->up = wp_buf_stream_open(rs->buf, &err)))
            return rs;
        wp_buf_free(rs->buf);
        free(rs);
    }
    wp_resp_error(resp, &err);
    return NULL;
}
static void *reduce_open(void *app, const wp_req *req, uint64_t length, wp_resp *resp) {
    return raw_open(app, req, length, resp, false);
}
static void *scan_open(void *app, const wp_req *req, uint64_t length, wp_resp *resp) {
    return raw_open(app, req, length, resp, true);
}
static int raw_write(void *sink, const void *data, size_t len, uint64_t offset, wp_err *err) {
    (void)offset; /* in order: the stream's own */
    return wp_buf_stream_write(((raw_sink *)sink)->up, data, len, err);
}
static void raw_close(void *sink) {
    raw_sink *rs = sink;
    wp_buf_stream_free(rs->up); /* waits for copies into buf */
    wp_buf_free(rs->buf);
    free(rs);
}

const wp_stream_hooks wp_api_reduce_stream = {reduce_open, raw_write, raw_close};
const wp_stream_hooks wp_api_scan_stream = {scan_open, raw_write, raw_close};
