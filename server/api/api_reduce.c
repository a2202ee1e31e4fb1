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
 * "check": true adds a float64 (integers: exact) CPU reference and the error against it.
 * The input forms are api_reduce_input.c's, the reference of "check" api_reduce_check.c's; this file
 * has the handler (a request's steps) and the stream hooks of raw bodies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_reduce_impl.h"
#include "engine/batch.h"
#include "jsonval.h"
#include "util/base64.h"
#include "util/json.h"
#include "util/jsonout.h"

#define WP_REDUCE_JSON_MAX (1u << 22) /* elements a JSON result may hold; more: base64, raw or a buffer */

static const char *const reduce_families[] = {"device_reduce",    "warp_reduce",   "block_reduce", "argmin", "argmax",
                                              "segmented_reduce", "reduce_by_key", "histogram",    NULL};
static const char *const scan_families[] = {"device_scan", "warp_scan", "block_scan", "stencil", NULL};

static const char *const body_fields[] = {
    "family",    "type",    "op",      "strategy", "block",   "width",   "accumulate", "exclusive", "inclusive",
    "init",      "radius",  "weights", "offsets",  "backend", "data",    "data_b64",   "buffer",    "generate",
    "check",     "output",  "compile", "count",    "device",  "profile", "shm",        "map",       "data2",
    "data2_b64", "buffer2", "shm2",    "ddof",     "keys",    "bins",    "range",      NULL};

static bool is_octet_stream(const char *s) {
    return s && !strncmp(s, "application/octet-stream", 24) && (!s[24] || s[24] == ';' || s[24] == ' ');
}

static bool listed(const char *const *names, const char *name) {
    for (; *names; names++)
        if (!strcmp(*names, name)) return true;
    return false;
}

/* ---- the handler: one request's state, then its steps ---- */

/* What a streamed raw body needs to know before it arrives. */
typedef struct {
    wp_type type;
    wp_backend *be;
} raw_plan;

static void req_free(wp_app *app, reduce_req *q) {
    if (q->out_buf) wp_buffers_abort(app->buffers, q->out_buf);
    free(q->out_host);
    wp_buf_free(q->out_dev);
    wp_region_put(q->out_region);
    if (q->out_into) wp_buffers_release(app->buffers, q->out_into);
    wp_reduce_result_free(&q->job.res);
    reduce_input_free(app, &q->in);
    reduce_input_free(app, &q->in2);
    free(q->fast.host);
    free(q->pre.p);
    wp_spec_free(&q->spec);
    cJSON_Delete(q->body);
}

static void add_timing(wp_jtext *t, const reduce_req *q) {
    const wp_req *req = q->req;
    const wp_reduce_result *r = &q->job.res;
    wp_jtext_qobj(t, WP_JKEY("timing"));
    uint64_t t_body = req->t_body_ns ? req->t_body_ns : req->t_start_ns;
    wp_jtext_qnum(t, WP_JKEY("receive_us"), (double)(t_body - req->t_start_ns) / 1e3);
    wp_jtext_qnum(t, WP_JKEY("handoff_us"), wp_req_handoff_us(req) + q->hand_wait_us + q->job.queue_us);
    wp_jtext_qnum(t, WP_JKEY("parse_us"), q->parse_us);
    const bool timed = !q->job.untimed; /* else the device's steps are null, and device_us says the round trip */
    /* a region's copy to the device (q->in.upload_us) is the host's own measure: there untimed too */
    wp_jtext_qnum_or_null(t, WP_JKEY("upload_us"), timed || q->in.upload_us > 0, q->in.upload_us + q->job.upload_us);
    if (q->in.form == FORM_GENERATE) wp_jtext_qnum(t, WP_JKEY("generate_us"), q->in.generate_us);
    wp_jtext_qnum(t, WP_JKEY("key_us"), r->key_us);
    wp_jtext_qnum(t, WP_JKEY("cache_us"), r->cache_us);
    wp_jtext_qnum(t, WP_JKEY("compile_ms"), r->compile_ms);
    wp_jtext_qnum(t, WP_JKEY("load_us"), r->load_us);
    wp_jtext_qnum_or_null(t, WP_JKEY("kernel_us"), timed, r->kernel_us);
    wp_jtext_qnum_or_null(t, WP_JKEY("download_us"), timed, q->job.download_us);
    if (q->job.device_us > 0) wp_jtext_qnum(t, WP_JKEY("device_us"), q->job.device_us);
    wp_jtext_qnum(t, WP_JKEY("total_us"), wp_us_since(req->t_start_ns));
    wp_jtext_close(t, '}');
}

/* The same stages for the Server-Timing header (http_resp.c adds the body's arrival, the hand-off, the
 * answer and the total). */
static void note_stages(wp_resp *resp, const reduce_req *q) {
    const wp_reduce_result *r = &q->job.res;
    if (q->t_hand_ns) wp_resp_stage(resp, "runner", q->hand_wait_us);
    if (q->job.queue_us > 0) wp_resp_stage(resp, "batch", q->job.queue_us);
    wp_resp_stage(resp, "parse", q->parse_us);
    wp_resp_stage(resp, "upload", q->in.upload_us + q->job.upload_us);
    if (q->in.form == FORM_GENERATE) wp_resp_stage(resp, "generate", q->in.generate_us);
    wp_resp_stage(resp, "key", r->key_us);
    wp_resp_stage(resp, "cache", r->cache_us - r->compile_ms * 1e3); /* cache_us holds the compile */
    wp_resp_stage(resp, "compile", r->compile_ms * 1e3);
    wp_resp_stage(resp, "load", r->load_us);
    if (q->job.untimed) {
        wp_resp_stage(resp, "device", q->job.device_us);
    } else {
        wp_resp_stage(resp, "kernel", r->kernel_us);
        wp_resp_stage(resp, "download", q->job.download_us);
    }
    resp->stages.t_done_ns = wp_now_ns();
}

/* The body as a JSON object (a raw body: its query), checked for unknown fields. */
static int parse_body(wp_app *app, reduce_req *q) {
    if (q->raw)
        q->body = reduce_query_object(q->req, &q->err);
    else if (!(q->body = reduce_parse_fast(app, q->req, &q->fast)))
        q->body = wp_api_parse_body(app, q->req, &q->err);
    if (!q->body) return -1;
    if (!cJSON_IsObject(q->body)) return WP_FAIL(&q->err, 400, "bad_request", "", "the body must be a JSON object");
    return wp_json_only(q->body, "", body_fields, &q->err);
}

/* The family (the endpoint's default, or one of its list) and which one input form is given. */
static int parse_family_form(reduce_req *q) {
    const char *const *allowed = q->scan ? scan_families : reduce_families;
    const cJSON *fam = wp_json_get(q->body, "family");
    if (fam && (!cJSON_IsString(fam) || !listed(allowed, fam->valuestring)))
        return WP_FAIL(&q->err, 400, "bad_family", "family", "%s runs %s", q->scan ? "/v1/scan" : "/v1/reduce",
                       q->scan ? "device_scan, warp_scan, block_scan or stencil"
                               : "device_reduce, warp_reduce, block_reduce, argmin, argmax, segmented_reduce, "
                                 "reduce_by_key or histogram");
    if (!fam) q->family_default = allowed[0];
    q->f = wp_family_find(fam ? fam->valuestring : allowed[0]);
    q->data = wp_json_get(q->body, "data");
    q->b64 = wp_json_get(q->body, "data_b64");
    q->bufid = wp_json_get(q->body, "buffer");
    q->gen = wp_json_get(q->body, "generate");
    q->shm = wp_json_get(q->body, "shm");
    int forms = !!q->data + !!q->b64 + !!q->bufid + !!q->gen + !!q->shm + q->raw;
    if (forms != 1)
        return WP_FAIL(&q->err, 400, forms ? "bad_request" : "missing_field", "data",
                       "give exactly one of data, data_b64, buffer, generate, shm, or a raw application/octet-stream "
                       "body");
    return 0;
}

/* "weights": stencil only, 2*radius+1 numbers. */
static int parse_weights(reduce_req *q, wp_reduce_job *job) {
    const cJSON *w = wp_json_get(q->body, "weights");
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

/* A second input goes with a map over y, and only with one (400 naming the field otherwise). */
static int parse_second(reduce_req *q) {
    const cJSON *v;
    const char *name;
    if (reduce_second_form(q->body, &v, &name, &q->err)) return -1;
    if (v && !q->spec.data.map_y)
        return WP_FAIL(&q->err, 400, "unknown_field", name,
                       "%s is read only by a map over y (\"map\": \"x*y\", or \"op\": \"dot\")", name);
    if (!v && q->spec.data.map_y)
        return WP_FAIL(&q->err, 400, "bad_map", "map",
                       "the map uses y but the request has no second input (data2, data2_b64, buffer2 or shm2)");
    return 0;
}

/* Whether a GPU job on the HTTP thread may go to the batcher's runners (batch_exec.h) rather than to a
 * worker: its input inline in the body (nothing to read on the device here) and its result in the
 * answer; whether it is small enough to batch wp_batch_hand_reduce decides. */
static bool may_hand(wp_app *app, const reduce_req *q) {
    const cJSON *out = wp_json_get(q->body, "output");
    return wp_app_hands_gpu_jobs(app) && (q->data || q->b64) && !q->raw && !q->spec.data.map_y &&
           (!out || (cJSON_IsString(out) && strcmp(out->valuestring, "buffer")));
}

/* Everything but the data: type, spec, backend, check/compile, init, weights. 1: defer. */
static int parse_job(wp_app *app, reduce_req *q) {
    if (parse_body(app, q) || parse_family_form(q)) return -1;
    if (q->bufid) {
        if (reduce_buffer_lookup(app, q)) return -1;
    } else if (!wp_json_get(q->body, "type")) {
        q->type_default = "f32";
    }
    if (q->f->flags & WP_F_OP && !wp_json_get(q->body, "op") && q->raw)
        return WP_FAIL(&q->err, 400, "missing_field", "op", "a raw body needs ?type=...&op=...");
    if (wp_spec_from_json_or(q->body, q->family_default, q->type_default, app->arch, &q->spec, &q->err) ||
        parse_second(q))
        return -1;
    int rc = q->in.held ? reduce_input_buffer(app, q) : wp_app_backend(app, q->body, q->f, &q->be, &q->err);
    if (rc) return rc;
    if (q->spec.data.map_y && q->inline_run) return 1;                       /* two inputs: on a worker */
    if (q->req->sink && !q->in.held) q->be = ((raw_sink *)q->req->sink)->be; /* placed when the streamed body began */
    if (q->inline_run && !wp_app_may_run_inline(app, q->be)) { /* a GPU job: to a worker before any upload, */
        if (!may_hand(app, q)) return 1;                       /* or to the batcher's runners */
        q->hand = true;
    }
    wp_reduce_job *job = &q->job.job;
    bool compile, profile;
    if (wp_json_bool(q->body, "check", &q->check, &q->err) || wp_json_bool(q->body, "compile", &compile, &q->err) ||
        wp_json_bool(q->body, "profile", &profile, &q->err))
        return -1;
    /* "compile" on the emulator batches as cuda would (building the batched kernel); with a window set, on a
     * worker, whose batch may wait it out (an HTTP thread never waits) */
    if (q->inline_run && compile && wp_backend_on_host(q->be) && app->batcher && wp_batcher_window_us(app->batcher) > 0)
        return 1;
    *job = (wp_reduce_job){.spec = &q->spec, .compile_on_emu = compile, .memory_only = q->inline_run};
    q->job.untimed = !profile; /* a batched job on cuda: no timing events unless profiled */
    const cJSON *iv = wp_json_get(q->body, "init");
    if (iv && !(q->f->flags & WP_F_SCAN))
        return WP_FAIL(&q->err, 400, "unknown_field", "init", "family %s takes no init", q->f->name);
    if (iv && wp_json_to_bits(iv, q->spec.type, "init", &job->init, &q->err)) return -1;
    job->has_init = iv != NULL;
    if (reduce_stat_ddof(q->body, &q->spec, &q->ddof, &q->err)) return -1;
    return parse_weights(q, job) || reduce_hist_parse(q->body, &q->spec, &q->hist, job, &q->err) ? -1 : 0;
}

/* The data, by its form: read onto the host (data, data_b64, a raw body in memory), already on the
 * device (buffer, a streamed raw body), or generated there; then the offsets. 1: defer. */
static int read_input(wp_app *app, reduce_req *q) {
    const wp_type t = q->spec.type;
    reduce_input *in = &q->in;
    int rc = 0;
    if (q->data && q->fast.on)
        rc = reduce_input_fast(app, q->req, &q->fast, t, in, &q->err);
    else if (q->data)
        rc = reduce_input_json(app, q->data, t, in, &q->err);
    else if (q->b64)
        rc = reduce_input_b64(app, q->b64, t, in, &q->err);
    else if (q->raw)
        rc = reduce_input_raw(app, q->req, t, q->be, in, &q->err);
    else if (q->gen)
        rc = reduce_input_generate(app, q->be, q->gen, t, q->inline_run, in, &q->err);
    else if (q->shm)
        rc = reduce_input_shm(app, q->req, q->shm, t, q->be, q->inline_run, in, &q->err);
    /* buffer: input_buffer has set it */
    if (rc) return rc;
    if (in->host) in->data = in->host;
    if (q->spec.data.map_y && reduce_input_second(app, q->req, q->body, t, q->be, in->count, &q->in2, &q->err))
        return -1;
    const cJSON *offs = wp_json_get(q->body, "offsets");
    if (q->f->flags & WP_F_SEGMENTS) return reduce_input_offsets(offs, in, &q->err);
    if (offs) return WP_FAIL(&q->err, 400, "unknown_field", "offsets", "only segmented_reduce takes offsets");
    return q->f->flags & WP_F_BINS ? reduce_hist_input(&q->hist, in, &q->err) : 0;
}

/* "output": a form's name, or {"shm": {"id", "offset"}} (a region of the caller's: api_shm.c). */
static int parse_output(reduce_req *q) {
    const cJSON *outv = wp_json_get(q->body, "output");
    if (!outv) return 0;
    static const char *const names[] = {
        [FORM_JSON] = "json", [FORM_B64] = "b64", [FORM_RAW] = "raw", [FORM_BUFFER] = "buffer"};
    const cJSON *shm = cJSON_IsObject(outv) ? wp_json_get(outv, "shm") : NULL;
    const cJSON *into = cJSON_IsObject(outv) ? wp_json_get(outv, "buffer") : NULL;
    if ((shm || into) && cJSON_GetArraySize(outv) == 1) {
        if (!q->array)
            return WP_FAIL(&q->err, 400, "bad_value", shm ? "output.shm" : "output.buffer",
                           "output.%s is for array results (scans, per-group results); %s gives one value",
                           shm ? "shm" : "buffer", q->f->name);
        q->out_form = shm ? FORM_SHM : FORM_INTO;
        return 0;
    }
    const char *ov = cJSON_IsString(outv) ? outv->valuestring : "";
    int k = -1;
    for (int i = 0; i <= FORM_BUFFER; i++)
        if (names[i] && !strcmp(ov, names[i])) k = i;
    if (k < 0)
        return WP_FAIL(&q->err, 400, "bad_value", "output",
                       "output must be json, b64, raw, buffer, {\"buffer\": ID} or {\"shm\": {\"id\", \"offset\"}}");
    q->out_form = (data_form)k;
    return 0;
}

/* The result into a region: through host memory (out_host), or a device buffer when it is large and
 * on a GPU, copied out by DMA after the run (finish_output). */
static int plan_shm_output(wp_app *app, reduce_req *q) {
    const cJSON *shm = wp_json_get(wp_json_get(q->body, "output"), "shm");
    const size_t bytes = q->plan.out_bytes;
    if (!(q->out_region = wp_api_shm_output(app, q->req, shm, bytes, &q->out_offset, &q->err))) return -1;
    if (bytes > WP_REDUCE_INLINE_MAX && !wp_backend_on_host(q->be)) {
        if (!(q->out_dev = wp_buf_alloc(q->be, bytes, &q->err))) return -1;
        q->job.job.out = q->out_dev;
        return 0;
    }
    if (!(q->out_host = malloc(bytes ? bytes : 1))) return WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory");
    return 0;
}

/* The result into a buffer of the registry ("output": {"buffer": ID}, e.g. a CUDA IPC buffer): held
 * for the request, of the job's type; the engine checks its size and device (400 bad_output). */
static int plan_into_output(wp_app *app, reduce_req *q) {
    const cJSON *id = wp_json_get(wp_json_get(q->body, "output"), "buffer");
    if (!cJSON_IsString(id))
        return WP_FAIL(&q->err, 400, "wrong_type", "output.buffer", "output.buffer must be a buffer's id");
    if (!(q->out_into = wp_buffers_get(app->buffers, q->req->user, id->valuestring, &q->out_info, &q->err))) {
        snprintf(q->err.field, sizeof q->err.field, "output.buffer");
        return -1;
    }
    if (q->out_info.count < q->plan.out_bytes / wp_type_size(q->spec.type))
        return WP_FAIL(&q->err, 400, "bad_output", "output.buffer", "buffer %s holds %llu elements, the result %llu",
                       q->out_info.id, (unsigned long long)q->out_info.count,
                       (unsigned long long)(q->plan.out_bytes / wp_type_size(q->spec.type)));
    if (q->out_info.type != q->spec.type)
        return WP_FAIL(&q->err, 400, "type_mismatch", "output.buffer", "buffer %s holds %s, the result is %s",
                       q->out_info.id, wp_type_name(q->out_info.type), wp_type_name(q->spec.type));
    q->job.job.out = q->out_into;
    return 0;
}

/* Where an array result goes ("output", Accept) and room for it: a new buffer, a region, or host memory. */
static int plan_output(wp_app *app, reduce_req *q) {
    const wp_reduce_job *job = &q->job.job;
    const size_t esize = wp_type_size(q->spec.type);
    q->array = q->f->data_out == WP_DATA_EACH || q->f->data_out == WP_DATA_GROUPS;
    q->out_form = q->in.form == FORM_B64 || q->in.form == FORM_RAW ? FORM_B64 : FORM_JSON;
    if (parse_output(q)) return -1;
    if (is_octet_stream(q->req->accept) && q->out_form != FORM_SHM && q->out_form != FORM_INTO) q->out_form = FORM_RAW;
    q->f->plan(&q->spec, job->n, job->groups, &q->plan);
    uint64_t out_count = q->array ? q->plan.out_bytes / esize : 0;
    if (q->array && q->out_form == FORM_JSON && out_count > WP_REDUCE_JSON_MAX)
        return WP_FAIL(&q->err, 413, "too_many_for_json", "output",
                       "%llu results are too many for JSON (at most %u): ask for output b64, raw, buffer or shm",
                       (unsigned long long)out_count, WP_REDUCE_JSON_MAX);
    if (q->out_form == FORM_SHM || q->out_form == FORM_INTO) {
        if (q->out_form == FORM_SHM ? plan_shm_output(app, q) : plan_into_output(app, q)) return -1;
    } else if (q->array && q->out_form == FORM_BUFFER) {
        /* like the input: a sharded input's result is sharded the same way (buffers.h) */
        q->out_buf =
            wp_buffers_create_like(app->buffers, q->req->user, q->in.held, q->be, q->spec.type, out_count, &q->err);
        if (!q->out_buf) return -1;
        q->job.job.out = q->out_buf;
    } else if ((q->array || q->f->data_out == WP_DATA_COUNTS) &&
               !(q->out_host = malloc(q->plan.out_bytes ? q->plan.out_bytes : 1))) {
        return WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory");
    }
    q->job.out_host = q->out_host;
    return 0;
}

/* After the run: a result bound for a region goes there. */
static int finish_output(reduce_req *q) {
    if (q->out_form != FORM_SHM) return 0;
    const size_t bytes = (size_t)q->job.res.out_count * wp_type_size(q->spec.type);
    if (q->out_dev)
        return wp_region_from_buf(q->out_region, q->out_offset, q->out_dev, 0, bytes, "output.shm.id", &q->err);
    return wp_region_write(q->out_region, q->out_offset, q->out_host, bytes, "output.shm.id", &q->err);
}

/* "key": one typed value (jsonval.h's text), or null when there is none. */
static void add_value(wp_jtext *o, const char *key, wp_type t, bool has, uint64_t bits) {
    char buf[48];
    wp_jtext_key(o, key);
    if (has)
        wp_json_bits_text(t, bits, buf, sizeof buf);
    else
        memcpy(buf, "null", 5);
    wp_jtext_text(o, buf, strlen(buf));
}

/* The rare results built as a tree (a statistic, a histogram): its pairs into the answer. */
static int add_tree_result(reduce_req *q, wp_jtext *o) {
    cJSON *tree = cJSON_CreateObject();
    int rc = !tree               ? WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory")
             : q->spec.data.stat ? reduce_stat_result(tree, &q->spec, &q->job.res, q->ddof)
                                 : reduce_hist_result(tree, &q->hist, q->out_host, q->in.count, &q->err);
    if (rc == 0) wp_jtext_members(o, tree);
    cJSON_Delete(tree);
    return rc;
}

/* An array result as a "data" list of values. */
/* "data": the list as text straight into the answer (a scan answers 10^6 values, too many for a cJSON
 * node each; long lists are printed on several threads, jsonval.h). -1 when out of memory. */
static int add_data(wp_jtext *o, wp_type t, const uint8_t *host, uint64_t count) {
    wp_jtext_qkey(o, WP_JKEY("data"));
    return wp_json_append_values(o, t, host, count) ? 0 : -1;
}

/* The result as JSON: the value, or the array in the form asked for, or the new buffer. */
static int add_result(wp_app *app, reduce_req *q, wp_jtext *o) {
    const wp_reduce_result *r = &q->job.res;
    const wp_type t = q->spec.type;
    if (q->spec.data.stat || q->f->data_out == WP_DATA_COUNTS) return add_tree_result(q, o);
    if (q->f->data_out == WP_DATA_VALUE || q->f->data_out == WP_DATA_ARG) {
        add_value(o, "value", t, r->has_value, r->value);
        if (q->f->data_out == WP_DATA_ARG) wp_jtext_qnum(o, WP_JKEY("index"), (double)r->index);
        if (r->acc_type != t && q->f->data_out == WP_DATA_VALUE) {
            wp_jtext_qobj(o, WP_JKEY("accumulator"));
            wp_jtext_qstr(o, WP_JKEY("type"), wp_type_name(r->acc_type));
            add_value(o, "value", r->acc_type, r->has_value, r->acc_value);
            wp_jtext_close(o, '}');
        }
        return 0;
    }
    wp_jtext_qnum(o, WP_JKEY("out_count"), (double)r->out_count);
    if (q->out_form == FORM_SHM) {
        const uint64_t bytes = r->out_count * wp_type_size(t);
        cJSON *written = wp_api_shm_written(q->out_region, q->out_offset, r->out_count, bytes);
        if (written) {
            wp_jtext_qkey(o, WP_JKEY("output"));
            wp_jtext_json(o, written);
        }
        cJSON_Delete(written);
    } else if (q->out_form == FORM_INTO) {
        wp_jtext_qobj(o, WP_JKEY("output"));
        wp_jtext_qobj(o, WP_JKEY("buffer"));
        wp_jtext_qstr(o, WP_JKEY("id"), q->out_info.id);
        wp_jtext_qnum(o, WP_JKEY("count"), (double)r->out_count);
        wp_jtext_close(o, '}');
        wp_jtext_close(o, '}');
    } else if (q->out_form == FORM_BUFFER) {
        wp_buffer_info info;
        wp_buf *created = q->out_buf;
        q->out_buf = NULL; /* commit frees it on failure */
        if (wp_buffers_commit(app->buffers, created, 0, &info, &q->err)) return -1;
        wp_jtext_qobj(o, WP_JKEY("buffer"));
        wp_jtext_qstr(o, WP_JKEY("id"), info.id);
        wp_jtext_qstr(o, WP_JKEY("type"), wp_type_name(info.type));
        wp_jtext_qnum(o, WP_JKEY("count"), (double)info.count);
        wp_jtext_close(o, '}');
    } else if (q->out_form == FORM_B64) {
        char *text = wp_b64_encode(q->out_host, q->plan.out_bytes);
        if (!text) return WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory");
        wp_jtext_qstr(o, WP_JKEY("data_b64"), text);
        free(text);
    } else if (add_data(o, t, q->out_host, r->out_count)) {
        return WP_FAIL(&q->err, 500, "out_of_memory", "", "out of memory");
    }
    return 0;
}

/* "check": the reference, over the input on the host (read back from a buffer or generated data). */
static int add_check(reduce_req *q, wp_jtext *o) {
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
    uint8_t *mapped = NULL; /* a map: the reference runs over the mapped values, as the kernel does */
    if (q->spec.data.map.expr && !(mapped = reduce_map_host(&q->spec, in->data, &q->in2, in->count, &q->err)))
        return -1;
    const uint8_t *data = mapped ? mapped : in->data;
    cJSON *c = q->spec.data.stat                  ? reduce_check_stat(&q->spec, data, in->count, r, q->ddof)
               : q->f->data_out == WP_DATA_VALUE  ? reduce_check_value(&q->spec, data, in->count, r)
               : q->f->data_out == WP_DATA_ARG    ? reduce_check_arg(&q->spec, data, in->count, r)
               : q->f->data_out == WP_DATA_COUNTS ? reduce_hist_check(&q->hist, data, in->count, q->out_host)
               : q->out_host ? reduce_check_array(&q->spec, data, in->count, q->out_host, r->out_count, in,
                                                  job->has_init, job->init)
                             : cJSON_CreateObject();
    free(mapped);
    if (c) {
        wp_jtext_qkey(o, WP_JKEY("check"));
        wp_jtext_json(o, c);
    }
    cJSON_Delete(c);
    return 0;
}

/* From "family" to "count" (and "empty"): the job as asked. */
static void put_head(wp_jtext *o, const reduce_req *q) {
    const wp_spec *s = &q->spec;
    const wp_family *f = q->f;
    wp_jtext_qstr(o, WP_JKEY("family"), f->name);
    wp_jtext_qstr(o, WP_JKEY("type"), wp_type_name(s->type));
    if (f->flags & WP_F_OP) wp_jtext_qstr(o, WP_JKEY("op"), s->op.text);
    if (s->data.map.expr) wp_jtext_qstr(o, WP_JKEY("map"), s->data.map.text);
    if (f->flags & WP_F_SCAN) wp_jtext_qbool(o, WP_JKEY("exclusive"), s->data.exclusive);
    if (f->flags & WP_F_WIDTH_GROUP) wp_jtext_qnum(o, WP_JKEY("width"), s->width);
    if (f->flags & WP_F_RADIUS) wp_jtext_qnum(o, WP_JKEY("radius"), s->data.radius);
    wp_jtext_qnum(o, WP_JKEY("count"), (double)q->in.count);
    if (!q->in.count && f->data_out == WP_DATA_VALUE) wp_jtext_qbool(o, WP_JKEY("empty"), true);
}

/* From "accumulate" to "input_buffer": where it ran, how, and the kernel. */
static void put_facts(wp_jtext *o, const reduce_req *q) {
    const wp_reduce_result *r = &q->job.res;
    const wp_spec *s = &q->spec;
    if (q->f->flags & WP_F_ACCUM && (s->type == WP_F16 || s->type == WP_BF16) && !s->data.stat)
        wp_jtext_qstr(o, WP_JKEY("accumulate"), s->data.native ? "native" : "f32");
    wp_jtext_qstr(o, WP_JKEY("backend"), wp_backend_name(q->be));
    wp_jtext_qstr(o, WP_JKEY("device"), wp_backend_facts(q->be)->name);
    wp_jtext_qstr(o, WP_JKEY("strategy"), wp_strategy_name(r->strategy));
    wp_jtext_qbool(o, WP_JKEY("deterministic"), r->deterministic);
    wp_jtext_qnum(o, WP_JKEY("block"), r->block);
    wp_jtext_qnum(o, WP_JKEY("grid"), r->grid);
    wp_jtext_qstr(o, WP_JKEY("key"), r->key_text);
    if (r->hash[0]) wp_jtext_qstr(o, WP_JKEY("hash"), r->hash);
    wp_jtext_qstr(o, WP_JKEY("cache"), r->compiled ? wp_source_name(r->source) : "none");
    if (q->in.held) wp_jtext_qstr(o, WP_JKEY("input_buffer"), q->binfo.id);
}

/* The hook while the device runs a job alone (wp_batch_reduce.meanwhile): put_head and put_facts into
 * q->pre, which respond splices (left empty when an allocation fails: respond writes them then). */
static void pre_write(void *ctx) {
    reduce_req *q = ctx;
    wp_jtext *t = &q->pre;
    put_head(t, q);
    q->pre_split = t->n;
    put_facts(t, q);
    if (t->failed) {
        free(t->p);
        *t = (wp_jtext){0};
    }
}

/* A job that answers one value (a sum, an argmin; not a statistic) and no "check", untimed: its answer's
 * parts are written while the device runs it, when it runs alone on its own thread (the engine calls the
 * hook only then: an HTTP thread's, a worker's or an --inline-gpu always leader's own wait). */
static void pre_arm(reduce_req *q) {
    const wp_family *f = q->f;
    if (q->job.untimed && !q->check && !q->spec.data.stat &&
        (f->data_out == WP_DATA_VALUE || f->data_out == WP_DATA_ARG))
        q->job.meanwhile = pre_write, q->job.meanwhile_ctx = q;
}

/* The response of a job that ran, built as text (the bytes a cJSON tree of it printed): 0, or -1
 * with q->err. */
static int respond(wp_app *app, reduce_req *q, wp_resp *resp) {
    wp_jtext o;
    wp_api_text_begin(&o, q->req);
    wp_jtext_open(&o, '{');
    const bool pre = q->pre.n > 0; /* written while the device ran (pre_write) */
    if (pre)
        wp_jtext_add(&o, q->pre.p, q->pre_split);
    else
        put_head(&o, q);
    if (add_result(app, q, &o)) {
        free(o.p);
        return -1;
    }
    if (pre)
        wp_jtext_add(&o, q->pre.p + q->pre_split, q->pre.n - q->pre_split); /* from its ',' on */
    else
        put_facts(&o, q);
    if (q->check && add_check(q, &o)) {
        free(o.p);
        return -1;
    }
    wp_jtext_qobj(&o, WP_JKEY("batch"));
    wp_jtext_qnum(&o, WP_JKEY("size"), q->job.size);
    wp_jtext_close(&o, '}');
    add_timing(&o, q);
    wp_jtext_close(&o, '}');
    wp_api_text_answer(&o, resp);
    return 0;
}

/* After the run (rc as wp_batch_run_reduce's): the answer, an error, or a deferral (q's parts are then
 * req_free's). */
static bool answer(wp_app *app, reduce_req *q, wp_resp *resp, int rc) {
    bool ok = false;
    if (rc == 0) rc = finish_output(q);
    if (rc == 0) note_stages(resp, q);
    if (rc == 0)
        wp_resp_note_kernel(resp, wp_backend_name(q->be),
                            q->job.res.compiled ? wp_source_name(q->job.res.source) : "none", q->f->name,
                            q->job.res.hash);
    if (rc == 0 && q->array && q->out_form == FORM_RAW) {
        wp_resp_bytes(resp, 200, "application/octet-stream", q->out_host, q->plan.out_bytes);
        ok = true;
    } else if (rc == 0) {
        rc = respond(app, q, resp);
        ok = rc == 0;
    }
    if (rc > 0)
        resp->defer = true; /* http.c calls again on a worker, where nothing above is left over */
    else if (rc < 0)
        wp_resp_error(resp, &q->err);
    return ok;
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
    int rc = q.inline_run && (req->body_len > WP_REDUCE_INLINE_MAX || wp_api_defer_unparsed(app, req))
                 ? 1
                 : parse_job(app, &q);
    const bool by_key = rc == 0 && (q.f->flags & WP_F_KEYS); /* reduce_by_key: api_reduce_bykey.c, on a worker */
    if (by_key && q.raw)
        rc = WP_FAIL(&q.err, 400, "missing_field", "keys", "reduce_by_key takes a JSON body with keys");
    if (rc == 0 && by_key && q.inline_run) rc = 1;
    if (rc == 0 && check_only) {
        check_only->type = q.spec.type;
        check_only->be = q.be;
        req_free(app, &q);
        return true;
    }
    if (rc == 0) rc = read_input(app, &q);
    if (rc == 0 && by_key) {
        const reduce_bykey_args a = {.body = q.body,
                                     .spec = &q.spec,
                                     .be = q.be,
                                     .data = &q.in,
                                     .compile = q.job.job.compile_on_emu,
                                     .check = q.check,
                                     .parse_us = wp_us_since(wp_req_t_handler(req))};
        ok = reduce_bykey(app, req, resp, &a, &q.err) == 0;
        if (!ok) wp_resp_error(resp, &q.err);
        req_free(app, &q);
        return ok;
    }
    if (rc == 0) {
        q.job.job.n = q.in.count;
        q.job.job.in = q.in.in;
        q.job.job.in2 = q.in2.in;
        q.job.in2_host = q.in2.data;
        q.job.job.groups = q.in.groups;
        q.job.in_host = q.in.data;
        q.job.offsets_host = q.in.offsets_host;
        q.parse_us = wp_us_since(wp_req_t_handler(req)); /* from the handler's start (after the hand-off) */
        rc = plan_output(app, &q);
    }
    if (rc == 0 && q.hand) {
        if (reduce_hand(app, &q, answer, req_free) == 0) return true; /* parked until the runner is done */
        rc = 1;                                                       /* not handed: to a worker after all */
    }
    if (rc == 0) {
        pre_arm(&q);
        rc = wp_batch_run_reduce(app, q.be, &q.job, &q.err);
    }
    ok = answer(app, &q, resp, rc);
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
    if (reduce_raw_length(app, length, plan.type, &err) == 0 && (rs = calloc(1, sizeof *rs)) == NULL)
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
