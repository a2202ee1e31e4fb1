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

#include "api.h"
#include "jsonval.h"
#include "util/base64.h"

#define WP_REDUCE_JSON_MAX (1u << 22)    /* elements a JSON result may hold; more: base64, raw or a buffer */
#define WP_REDUCE_INLINE_MAX (64u << 10) /* bytes of input (or of body) a job may have to run on the HTTP thread */

typedef enum { FORM_JSON, FORM_B64, FORM_RAW, FORM_BUFFER, FORM_GENERATE } data_form;

static const char *const reduce_families[] = {"device_reduce",    "warp_reduce", "block_reduce", "argmin", "argmax",
                                              "segmented_reduce", NULL};
static const char *const scan_families[] = {"device_scan", "warp_scan", "block_scan", "stencil", NULL};

static const char *const body_fields[] = {
    "family", "type",   "op",      "strategy", "block",   "width",   "accumulate", "exclusive", "inclusive",
    "init",   "radius", "weights", "offsets",  "backend", "data",    "data_b64",   "buffer",    "generate",
    "check",  "output", "compile", "count",    "device",  "profile", NULL};

/* Query arguments of a raw body, and how each becomes JSON. */
static const struct {
    const char *name;
    char kind; /* 's' string, 'n' number, 'b' bool, 'v' a value (number when it reads as one) */
} query_fields[] = {{"family", 's'}, {"type", 's'},       {"op", 's'},        {"strategy", 's'},  {"block", 'n'},
                    {"width", 'n'},  {"accumulate", 's'}, {"exclusive", 'b'}, {"inclusive", 'b'}, {"init", 'v'},
                    {"radius", 'n'}, {"backend", 's'},    {"check", 'b'},     {"output", 's'},    {"compile", 'b'},
                    {"device", 'n'}, {"profile", 'b'}};

typedef struct {
    data_form form;
    const uint8_t *data; /* packed input on the host: host, or the raw body itself (no copy); uploaded
                            with the job (batch_exec.h) */
    uint8_t *host;       /* owned copy (JSON, base64; buffer/generate only for check) */
    uint64_t count;
    wp_buf *in; /* the job's input */
    bool in_owned;
    wp_buf *held; /* from wp_buffers_get, released at the end */
    uint64_t *offsets_host;
    uint64_t groups;
    double upload_us, generate_us;
} reduce_input;

static void input_free(wp_app *app, reduce_input *in) {
    free(in->host);
    free(in->offsets_host);
    if (in->in_owned) wp_buf_free(in->in);
    if (in->held) wp_buffers_release(app->buffers, in->held);
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

static int check_count(wp_app *app, uint64_t n, const char *field, wp_err *err) {
    if (n > app->max_elements)
        return WP_FAIL(err, 413, "too_many_elements", field,
                       "%llu elements; this server takes at most %llu (--max-elements)", (unsigned long long)n,
                       (unsigned long long)app->max_elements);
    return 0;
}

/* ---- inputs ---- */

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
    if (wp_app_emu_limit(app, be, in->count, "generate.n", err)) return -1;
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

/* segmented_reduce: "offsets" [o0, o1, ..., og], non-decreasing, og <= n, as uint64. */
static int input_offsets(const cJSON *list, reduce_input *in, wp_err *err) {
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
        wp_json_num_k(o, "max_abs_error", e->max_abs);
        wp_json_num_k(o, "max_rel_error", e->max_rel);
    } else {
        wp_json_num_k(o, "mismatches", (double)e->mismatches);
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
        wp_json_str_k(o, "note", "no elements: the value is the identity");
        return o;
    }
    uint64_t ref = ref_fold(s, host, 0, n);
    ref_error e = {0};
    ref_compare(s, r->acc_type, check_in_f64(s->type) ? r->acc_value : r->value, ref, &e);
    if (check_in_f64(s->type)) {
        cJSON_AddItemToObject(o, "reference", wp_json_from_bits(WP_F64, ref));
        wp_json_num_k(o, "abs_error", e.max_abs);
        wp_json_num_k(o, "rel_error", e.max_rel);
    } else {
        cJSON_AddItemToObject(o, "reference", wp_json_from_bits(s->type, ref));
        wp_json_bool_k(o, "exact", e.mismatches == 0);
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
    wp_json_num_k(o, "reference_index", (double)best);
    wp_json_bool_k(o, "match", best == r->index);
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

/* ---- the handler: one request's state, then its steps ---- */

/* What a streamed raw body needs to know before it arrives. */
typedef struct {
    wp_type type;
    wp_backend *be;
} raw_plan;

/* Everything one request holds; req_free gives back what is set. */
typedef struct {
    const wp_req *req;
    bool scan, raw, inline_run; /* inline_run: on the HTTP thread (WP_ROUTE_TRY_INLINE), may defer */
    wp_err err;
    wp_spec spec;
    const wp_family *f;
    cJSON *body;
    fast_data fast;
    const cJSON *data, *b64, *bufid, *gen; /* which input form the body names */
    wp_buffer_info binfo;
    wp_backend *be;
    bool check;
    reduce_input in;
    wp_batch_reduce job; /* the job and its results (batch_exec.h) */
    data_form out_form;
    bool array;        /* the family writes an array (scans, per-group results) */
    wp_data_plan plan; /* for the output's size */
    wp_buf *out_buf;   /* "output":"buffer": created in the registry */
    uint8_t *out_host; /* an array result, downloaded */
    double parse_us;
} reduce_req;

static void req_free(wp_app *app, reduce_req *q) {
    if (q->out_buf) wp_buffers_abort(app->buffers, q->out_buf);
    free(q->out_host);
    wp_reduce_result_free(&q->job.res);
    input_free(app, &q->in);
    free(q->fast.host);
    wp_spec_free(&q->spec);
    cJSON_Delete(q->body);
}

static void add_timing(cJSON *o, const reduce_req *q) {
    const wp_req *req = q->req;
    const wp_reduce_result *r = &q->job.res;
    cJSON *t = wp_json_obj_k(o, "timing");
    uint64_t t_body = req->t_body_ns ? req->t_body_ns : req->t_start_ns;
    wp_json_num_k(t, "receive_us", (double)(t_body - req->t_start_ns) / 1e3);
    wp_json_num_k(t, "parse_us", q->parse_us);
    const bool timed = !q->job.untimed; /* else the device's steps are null, and device_us says the round trip */
    wp_json_add_number_or_null(t, "upload_us", timed, q->in.upload_us + q->job.upload_us);
    if (q->in.form == FORM_GENERATE) wp_json_num_k(t, "generate_us", q->in.generate_us);
    wp_json_num_k(t, "key_us", r->key_us);
    wp_json_num_k(t, "cache_us", r->cache_us);
    wp_json_num_k(t, "compile_ms", r->compile_ms);
    wp_json_num_k(t, "load_us", r->load_us);
    wp_json_add_number_or_null(t, "kernel_us", timed, r->kernel_us);
    wp_json_add_number_or_null(t, "download_us", timed, q->job.download_us);
    if (q->job.device_us > 0) wp_json_num_k(t, "device_us", q->job.device_us);
    wp_json_num_k(t, "total_us", wp_us_since(req->t_start_ns));
}

/* The body as a JSON object (a raw body: its query), checked for unknown fields. */
static int parse_body(wp_app *app, reduce_req *q) {
    if (q->raw)
        q->body = query_object(q->req, &q->err);
    else if (!(q->body = parse_fast(app, q->req, &q->fast)))
        q->body = wp_api_parse_body(app, q->req, &q->err);
    if (!q->body) return -1;
    if (!cJSON_IsObject(q->body)) return WP_FAIL(&q->err, 400, "bad_request", "", "the body must be a JSON object");
    return wp_json_only(q->body, "", body_fields, &q->err);
}

/* The family (the endpoint's default, or one of its list) and which one input form is given. */
static int parse_family_form(reduce_req *q) {
    const char *const *allowed = q->scan ? scan_families : reduce_families;
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(q->body, "family");
    if (fam && (!cJSON_IsString(fam) || !listed(allowed, fam->valuestring)))
        return WP_FAIL(&q->err, 400, "bad_family", "family", "%s runs %s", q->scan ? "/v1/scan" : "/v1/reduce",
                       q->scan ? "device_scan, warp_scan, block_scan or stencil"
                               : "device_reduce, warp_reduce, block_reduce, argmin, argmax or segmented_reduce");
    if (!fam) wp_json_str_k(q->body, "family", allowed[0]);
    q->f = wp_family_find(cJSON_GetObjectItemCaseSensitive(q->body, "family")->valuestring);
    q->data = cJSON_GetObjectItemCaseSensitive(q->body, "data");
    q->b64 = cJSON_GetObjectItemCaseSensitive(q->body, "data_b64");
    q->bufid = cJSON_GetObjectItemCaseSensitive(q->body, "buffer");
    q->gen = cJSON_GetObjectItemCaseSensitive(q->body, "generate");
    int forms = !!q->data + !!q->b64 + !!q->bufid + !!q->gen + q->raw;
    if (forms != 1)
        return WP_FAIL(&q->err, 400, forms ? "bad_request" : "missing_field", "data",
                       "give exactly one of data, data_b64, buffer, generate, or a raw application/octet-stream body");
    return 0;
}

/* "buffer": the registry's buffer (held until the request is over); its type is the job's. */
static int buffer_lookup(wp_app *app, reduce_req *q) {
    if (!cJSON_IsString(q->bufid)) return WP_FAIL(&q->err, 400, "wrong_type", "buffer", "buffer must be an id string");
    if (!(q->in.held = wp_buffers_get(app->buffers, q->bufid->valuestring, &q->binfo, &q->err))) return -1;
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(q->body, "type");
    if (!ty)
        wp_json_str_k(q->body, "type", wp_type_name(q->binfo.type));
    else if (!cJSON_IsString(ty) || wp_type_parse(ty->valuestring) != (int)q->binfo.type)
        return WP_FAIL(&q->err, 400, "type_mismatch", "type", "buffer %s holds %s", q->binfo.id,
                       wp_type_name(q->binfo.type));
    return 0;
}

/* The buffer form's input: the buffer's backend (a "device" pin naming another device is 400
 * device_mismatch, placement.h), and its first "count" elements (all by default).
 * Returns 1 (defer) for a large one on the HTTP thread. */
static int input_buffer(wp_app *app, reduce_req *q) {
    int pinned;
    if (wp_placement_pin(q->body, &pinned, &q->err) || !(q->be = wp_placement_pick(app, q->in.held, pinned, &q->err)))
        return -1;
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(q->body, "backend");
    if (bw &&
        (!cJSON_IsString(bw) || (strcmp(bw->valuestring, "auto") && strcmp(bw->valuestring, wp_backend_name(q->be)))))
        return WP_FAIL(&q->err, 400, "backend_mismatch", "backend", "buffer %s lives on %s", q->binfo.id,
                       wp_backend_name(q->be));
    q->in.in = q->in.held;
    q->in.count = q->binfo.count;
    q->in.form = FORM_BUFFER;
    const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(q->body, "count");
    long long c;
    if (cnt && wp_json_int(cnt, "count", 0, (long long)q->binfo.count, &c, &q->err)) return -1;
    if (cnt) q->in.count = (uint64_t)c;
    if (check_count(app, q->in.count, "buffer", &q->err)) return -1;
    return q->inline_run && q->in.count * wp_type_size(q->spec.type) > WP_REDUCE_INLINE_MAX ? 1 : 0;
}

/* "weights": stencil only, 2*radius+1 numbers. */
static int parse_weights(reduce_req *q, wp_reduce_job *job) {
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(q->body, "weights");
    if (!w) return 0;
    int want = 2 * q->spec.data.radius + 1, i = 0;
    if (!(q->f->flags & WP_F_RADIUS) || !cJSON_IsArray(w) || cJSON_GetArraySize(w) != want)
        return WP_FAIL(&q->err, 400, "bad_weights", "weights",
                       "weights must be a list of 2*radius+1 = %d numbers (stencil)", want);
    for (const cJSON *x = w->child; x; x = x->next, i++) {
        if (!cJSON_IsNumber(x))
            return WP_FAIL(&q->err, 400, "bad_weights", "weights", "weights[%d] must be a number", i);
        job->weights[i] = x->valuedouble;
    }
    job->has_weights = true;
    return 0;
}

/* Everything but the data: type, spec, backend, check/compile, init, weights. 1: defer. */
static int parse_job(wp_app *app, reduce_req *q) {
    if (parse_body(app, q) || parse_family_form(q)) return -1;
    if (q->bufid) {
        if (buffer_lookup(app, q)) return -1;
    } else if (!cJSON_GetObjectItemCaseSensitive(q->body, "type")) {
        wp_json_str_k(q->body, "type", "f32");
    }
    if (q->f->flags & WP_F_OP && !cJSON_GetObjectItemCaseSensitive(q->body, "op") && q->raw)
        return WP_FAIL(&q->err, 400, "missing_field", "op", "a raw body needs ?type=...&op=...");
    if (wp_spec_from_json(q->body, app->arch, &q->spec, &q->err)) return -1;
    int rc = q->in.held ? input_buffer(app, q) : wp_app_backend(app, q->body, q->f, &q->be, &q->err);
    if (rc) return rc;
    if (q->req->sink && !q->in.held) q->be = ((raw_sink *)q->req->sink)->be; /* placed when the streamed body began */
    if (q->inline_run && !wp_app_may_run_inline(app, q->be)) return 1; /* a GPU job: to a worker before any upload */
    wp_reduce_job *job = &q->job.job;
    bool compile, profile;
    if (wp_json_bool(q->body, "check", &q->check, &q->err) || wp_json_bool(q->body, "compile", &compile, &q->err) ||
        wp_json_bool(q->body, "profile", &profile, &q->err))
        return -1;
    *job = (wp_reduce_job){.spec = &q->spec, .compile_on_emu = compile, .memory_only = q->inline_run};
    q->job.untimed = !profile; /* a batched job on cuda: no timing events unless profiled */
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(q->body, "init");
    if (iv && !(q->f->flags & WP_F_SCAN))
        return WP_FAIL(&q->err, 400, "unknown_field", "init", "family %s takes no init", q->f->name);
    if (iv && wp_json_to_bits(iv, q->spec.type, "init", &job->init, &q->err)) return -1;
    job->has_init = iv != NULL;
    return parse_weights(q, job);
}

/* The data, by its form: read onto the host (data, data_b64, a raw body in memory), already on the
 * device (buffer, a streamed raw body), or generated there; then the offsets. 1: defer. */
static int read_input(wp_app *app, reduce_req *q) {
    const wp_type t = q->spec.type;
    reduce_input *in = &q->in;
    int rc = 0;
    if (q->data && q->fast.on)
        rc = input_fast(app, q->req, &q->fast, t, in, &q->err);
    else if (q->data)
        rc = input_json(app, q->data, t, in, &q->err);
    else if (q->b64)
        rc = input_b64(app, q->b64, t, in, &q->err);
    else if (q->raw)
        rc = input_raw(app, q->req, t, q->be, in, &q->err);
    else if (q->gen)
        rc = input_generate(app, q->be, q->gen, t, q->inline_run, in, &q->err);
    /* buffer: input_buffer has set it */
    if (rc) return rc;
    if (in->host) in->data = in->host;
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(q->body, "offsets");
    if (q->f->flags & WP_F_SEGMENTS) return input_offsets(offs, in, &q->err);
    if (offs) return WP_FAIL(&q->err, 400, "unknown_field", "offsets", "only segmented_reduce takes offsets");
    return 0;
}

/* Where an array result goes ("output", Accept) and room for it: a new buffer, or host memory. */
static int plan_output(wp_app *app, reduce_req *q) {
    const wp_reduce_job *job = &q->job.job;
    const size_t esize = wp_type_size(q->spec.type);
    q->array = q->f->data_out == WP_DATA_EACH || q->f->data_out == WP_DATA_GROUPS;
    q->out_form = q->in.form == FORM_B64 || q->in.form == FORM_RAW ? FORM_B64 : FORM_JSON;
    const cJSON *outv = cJSON_GetObjectItemCaseSensitive(q->body, "output");
    if (outv) {
        static const char *const names[] = {
            [FORM_JSON] = "json", [FORM_B64] = "b64", [FORM_RAW] = "raw", [FORM_BUFFER] = "buffer"};
        const char *ov = cJSON_IsString(outv) ? outv->valuestring : "";
        int k = -1;
        for (int i = 0; i <= FORM_BUFFER; i++)
            if (names[i] && !strcmp(ov, names[i])) k = i;
        if (k < 0) return WP_FAIL(&q->err, 400, "bad_value", "output", "output must be json, b64, raw or buffer");
        q->out_form = (data_form)k;
    }
    if (is_octet_stream(q->req->accept)) q->out_form = FORM_RAW;
    q->f->plan(&q->spec, job->n, job->groups, &q->plan);
    uint64_t out_count = q->array ? q->plan.out_bytes / esize : 0;
    if (q->array && q->out_form == FORM_JSON && out_count > WP_REDUCE_JSON_MAX)
        return WP_FAIL(&q->err, 413, "too_many_for_json", "output",
                       "%llu results are too many for JSON (at most %u): ask for output b64, raw or buffer",
                       (unsigned long long)out_count, WP_REDUCE_JSON_MAX);
    if (q->array && q->out_form == FORM_BUFFER) {
        /* like the input: a sharded input's result is sharded the same way (buffers.h) */
        q->out_buf = wp_buffers_create_like(app->buffers, q->in.held, q->be, q->spec.type, out_count, &q->err);
        if (!q->out_buf) return -1;
        q->job.job.out = q->out_buf;
    } else if (q->array && !(q->out_host = malloc(q->plan.out_bytes ? q->plan.out_bytes : 1))) {
        return WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory");
    }
    q->job.out_host = q->out_host;
    return 0;
}

/* The result as JSON: the value, or the array in the form asked for, or the new buffer. */
static int add_result(wp_app *app, reduce_req *q, cJSON *o) {
    const wp_reduce_result *r = &q->job.res;
    const wp_type t = q->spec.type;
    if (q->f->data_out == WP_DATA_VALUE || q->f->data_out == WP_DATA_ARG) {
        cJSON_AddItemToObject(o, "value", r->has_value ? wp_json_from_bits(t, r->value) : cJSON_CreateNull());
        if (q->f->data_out == WP_DATA_ARG) wp_json_num_k(o, "index", (double)r->index);
        if (r->acc_type != t && q->f->data_out == WP_DATA_VALUE) {
            cJSON *acc = wp_json_obj_k(o, "accumulator");
            wp_json_str_k(acc, "type", wp_type_name(r->acc_type));
            cJSON_AddItemToObject(acc, "value",
                                  r->has_value ? wp_json_from_bits(r->acc_type, r->acc_value) : cJSON_CreateNull());
        }
        return 0;
    }
    wp_json_num_k(o, "out_count", (double)r->out_count);
    if (q->out_form == FORM_BUFFER) {
        wp_buffer_info info;
        wp_buf *created = q->out_buf;
        q->out_buf = NULL; /* commit frees it on failure */
        if (wp_buffers_commit(app->buffers, created, 0, &info, &q->err)) return -1;
        cJSON *bo = wp_json_obj_k(o, "buffer");
        wp_json_str_k(bo, "id", info.id);
        wp_json_str_k(bo, "type", wp_type_name(info.type));
        wp_json_num_k(bo, "count", (double)info.count);
    } else if (q->out_form == FORM_B64) {
        char *text = wp_b64_encode(q->out_host, q->plan.out_bytes);
        if (!text) return WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory");
        wp_json_str_k(o, "data_b64", text);
        free(text);
    } else {
        cJSON *list = cJSON_AddArrayToObject(o, "data");
        for (uint64_t i = 0; i < r->out_count; i++)
            cJSON_AddItemToArray(list, wp_json_from_bits(t, wp_data_load(t, q->out_host, i)));
    }
    return 0;
}

/* "check": the reference, over the input on the host (read back from a buffer or generated data). */
static int add_check(reduce_req *q, cJSON *o) {
    reduce_input *in = &q->in;
    const size_t esize = wp_type_size(q->spec.type);
    if (!in->data) {
        if (!(in->host = malloc((size_t)in->count * esize + 1)))
            return WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory");
        if (wp_buf_read(in->in, 0, in->host, (size_t)in->count * esize, &q->err)) return -1;
        in->data = in->host;
    }
    const wp_reduce_result *r = &q->job.res;
    const wp_reduce_job *job = &q->job.job;
    cJSON *c = q->f->data_out == WP_DATA_VALUE ? check_value(&q->spec, in->data, in->count, r)
               : q->f->data_out == WP_DATA_ARG ? check_arg(&q->spec, in->data, in->count, r)
               : q->out_host
                   ? check_array(&q->spec, in->data, in->count, q->out_host, r->out_count, in, job->has_init, job->init)
                   : cJSON_CreateObject();
    cJSON_AddItemToObject(o, "check", c);
    return 0;
}

/* The response of a job that ran. */
static cJSON *respond(wp_app *app, reduce_req *q) {
    const wp_reduce_result *r = &q->job.res;
    const wp_spec *s = &q->spec;
    const wp_family *f = q->f;
    cJSON *o = cJSON_CreateObject();
    wp_json_str_k(o, "family", f->name);
    wp_json_str_k(o, "type", wp_type_name(s->type));
    if (f->flags & WP_F_OP) wp_json_str_k(o, "op", s->op.text);
    if (f->flags & WP_F_SCAN) wp_json_bool_k(o, "exclusive", s->data.exclusive);
    if (f->flags & WP_F_WIDTH_GROUP) wp_json_num_k(o, "width", s->width);
    if (f->flags & WP_F_RADIUS) wp_json_num_k(o, "radius", s->data.radius);
    wp_json_num_k(o, "count", (double)q->in.count);
    if (!q->in.count && f->data_out == WP_DATA_VALUE) wp_json_bool_k(o, "empty", true);
    if (add_result(app, q, o)) {
        cJSON_Delete(o);
        return NULL;
    }
    if (f->flags & WP_F_ACCUM && (s->type == WP_F16 || s->type == WP_BF16))
        wp_json_str_k(o, "accumulate", s->data.native ? "native" : "f32");
    wp_json_str_k(o, "backend", wp_backend_name(q->be));
    wp_json_str_k(o, "device", wp_backend_facts(q->be)->name);
    wp_json_str_k(o, "strategy", wp_strategy_name(r->strategy));
    wp_json_bool_k(o, "deterministic", r->deterministic);
    wp_json_num_k(o, "block", r->block);
    wp_json_num_k(o, "grid", r->grid);
    wp_json_str_k(o, "key", r->key_text);
    if (r->hash[0]) wp_json_str_k(o, "hash", r->hash);
    wp_json_str_k(o, "cache", r->compiled ? wp_source_name(r->source) : "none");
    if (q->in.held) wp_json_str_k(o, "input_buffer", q->binfo.id);
    if (q->check && add_check(q, o)) {
        cJSON_Delete(o);
        return NULL;
    }
    wp_json_num_k(wp_json_obj_k(o, "batch"), "size", q->job.size);
    add_timing(o, q);
    return o;
}

/* One request. check_only (opening a streamed raw body: no body yet): runs every check that needs no
 * data and returns true with the job's type and backend, or false with the error in resp. */
static bool handle(wp_app *app, const wp_req *req, wp_resp *resp, bool scan, raw_plan *check_only) {
    reduce_req q = {.req = req, .scan = scan, .raw = is_octet_stream(req->content_type)};
    /* Called on the HTTP thread first (WP_ROUTE_TRY_INLINE): a small job whose kernel is in the memory
     * cache (on emu without "compile", none is needed) is answered there; anything else is deferred
     * to a worker before it blocks: a large body or input, a compile, a disk read. */
    q.inline_run = req->may_defer;
    bool ok = false;
    int rc = q.inline_run && req->body_len > WP_REDUCE_INLINE_MAX ? 1 : parse_job(app, &q);
    if (rc == 0 && check_only) {
        check_only->type = q.spec.type;
        check_only->be = q.be;
        req_free(app, &q);
        return true;
    }
    if (rc == 0) rc = read_input(app, &q);
    if (rc == 0) {
        q.job.job.n = q.in.count;
        q.job.job.in = q.in.in;
        q.job.job.groups = q.in.groups;
        q.job.in_host = q.in.data;
        q.job.offsets_host = q.in.offsets_host;
        const uint64_t t_body = req->t_body_ns ? req->t_body_ns : req->t_start_ns;
        q.parse_us = wp_us_since(t_body); /* from the last byte of the body */
        rc = plan_output(app, &q);
    }
    if (rc == 0) rc = wp_batch_run_reduce(app, q.be, &q.job, &q.err);
    if (rc == 0)
        wp_resp_note_kernel(resp, wp_backend_name(q.be), q.job.res.compiled ? wp_source_name(q.job.res.source) : "none",
                            q.f->name, q.job.res.hash);
    if (rc == 0 && q.array && q.out_form == FORM_RAW) {
        wp_resp_bytes(resp, 200, "application/octet-stream", q.out_host, q.plan.out_bytes);
        ok = true;
    } else if (rc == 0) {
        cJSON *o = respond(app, &q);
        if (o) wp_resp_json(resp, 200, o);
        ok = o != NULL;
        rc = ok ? 0 : -1;
    }
    if (rc > 0)
        resp->defer = true; /* http.c calls again on a worker, where nothing above is left over */
    else if (rc < 0)
        wp_resp_error(resp, &q.err);
    req_free(app, &q);
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
