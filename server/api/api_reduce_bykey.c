/* api_reduce_bykey.c — POST /v1/reduce with "family": "reduce_by_key": the second input ("keys": an
 * integer array in any of the data forms) and the answer, {"runs": N, "keys": [...], "data": [...]}
 * (64-bit integers as strings), or with "output": "b64" keys_b64/data_b64, or with "output": "buffer"
 * a new buffer for each. api_reduce.c has read the spec and the data; the engine (engine/bykey.c)
 * runs the job. Owns: one request's keys, device copies and result buffers, until it returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_reduce_impl.h"
#include "jsonval.h"
#include "util/base64.h"
#include "util/json.h"

#define WP_BYKEY_JSON_MAX (1u << 22) /* runs a JSON answer may hold; more: b64 or buffer */

typedef struct {
    reduce_input keys;
    wp_buffer_info kinfo;
    wp_buf *dev_keys, *dev_values; /* uploads of host inputs (owned) */
    wp_buf *out_keys, *out_values; /* room for n runs (owned) */
    uint8_t *host_keys, *host_values;
    wp_bykey_result res;
    double download_us; /* the runs read back or copied into their buffers */
} bykey_req;

static void bykey_free(wp_app *app, bykey_req *k) {
    reduce_input_free(app, &k->keys);
    wp_buf_free(k->dev_keys);
    wp_buf_free(k->dev_values);
    wp_buf_free(k->out_keys);
    wp_buf_free(k->out_values);
    free(k->host_keys);
    free(k->host_values);
}

/* An input error's field said under "keys." ("data[3]" -> "keys.data[3]"), and its message where it
 * starts with that field ("data[3]: ..." -> "keys.data[3]: ..."). */
static int keys_field(wp_err *err) {
    char field[sizeof err->field], msg[sizeof err->msg];
    const size_t n = strlen(err->field);
    if (strncmp(err->field, "keys", 4)) {
        if (n && !strncmp(err->msg, err->field, n)) {
            snprintf(msg, sizeof msg, "keys.%.250s", err->msg);
            snprintf(err->msg, sizeof err->msg, "%s", msg);
        }
        snprintf(field, sizeof field, "keys.%.58s", err->field);
        snprintf(err->field, sizeof err->field, "%s", field);
    }
    return -1;
}

/* "keys": {"buffer": ID} — the registry's buffer, held; its type (an integer type) is the keys'. */
static int keys_buffer(wp_app *app, const wp_user *who, const cJSON *id, wp_spec *spec, wp_backend *be, bykey_req *k,
                       wp_err *err) {
    if (!cJSON_IsString(id)) return WP_FAIL(err, 400, "wrong_type", "keys.buffer", "keys.buffer must be an id string");
    if (!(k->keys.held = wp_buffers_get(app->buffers, who, id->valuestring, &k->kinfo, err))) {
        snprintf(err->field, sizeof err->field, "keys.buffer");
        return -1;
    }
    if (!wp_type_is_int(k->kinfo.type))
        return WP_FAIL(err, 400, "bad_type", "keys.type", "buffer %s holds %s: keys must be of an integer type",
                       k->kinfo.id, wp_type_name(k->kinfo.type));
    if (wp_buf_shards(k->keys.held) || wp_buf_backend(k->keys.held) != be)
        return WP_FAIL(err, 400, "backend_mismatch", "keys.buffer", "buffer %s is not on %s, where the job runs",
                       k->kinfo.id, wp_backend_name(be));
    spec->data.keys = k->kinfo.type;
    k->keys.in = k->keys.held;
    k->keys.count = k->kinfo.count;
    k->keys.form = FORM_BUFFER;
    return 0;
}

/* The keys in their form, as long as the data. */
static int read_keys(wp_app *app, const wp_req *req, const cJSON *body, wp_spec *spec, wp_backend *be, uint64_t count,
                     bykey_req *k, wp_err *err) {
    const cJSON *keys = wp_json_get(body, "keys");
    if (!keys)
        return WP_FAIL(err, 400, "missing_field", "keys",
                       "reduce_by_key needs \"keys\": {\"type\", \"data\"} or "
                       "{\"buffer\"}, as long as the data");
    const cJSON *ty = wp_json_get(keys, "type"), *data = wp_json_get(keys, "data"),
                *b64 = wp_json_get(keys, "data_b64"), *id = wp_json_get(keys, "buffer"),
                *shm = wp_json_get(keys, "shm");
    static const char *const fields[] = {"type", "data", "data_b64", "buffer", "shm", NULL};
    if (wp_json_only(keys, "keys.", fields, err)) return -1;
    if (!!data + !!b64 + !!id + !!shm != 1)
        return WP_FAIL(err, 400, data || b64 || id || shm ? "bad_request" : "missing_field", "keys",
                       "keys takes exactly one of data, data_b64, buffer, shm");
    const wp_type t = spec->data.keys;
    int rc = id     ? keys_buffer(app, req->user, id, spec, be, k, err)
             : data ? reduce_input_json(app, data, t, &k->keys, err)
             : b64  ? reduce_input_b64(app, b64, t, &k->keys, err)
                    : reduce_input_shm(app, req, shm, t, be, false, &k->keys, err);
    if (rc) return keys_field(err);
    if (id && ty && spec->data.keys != (wp_type)wp_type_parse(ty->valuestring))
        return WP_FAIL(err, 400, "type_mismatch", "keys.type", "buffer %s holds %s", k->kinfo.id,
                       wp_type_name(k->kinfo.type));
    if (k->keys.count != count)
        return WP_FAIL(err, 400, "bad_length", "keys", "%llu keys for %llu values: give one key per value",
                       (unsigned long long)k->keys.count, (unsigned long long)count);
    return 0;
}

/* A device copy of an input given on the host (JSON, base64, a small region), or its own buffer. */
static int device_input(wp_backend *be, const reduce_input *in, size_t esize, wp_buf **owned, const wp_buf **dev,
                        double *upload_us, wp_err *err) {
    if (in->in) {
        *dev = in->in;
        return 0;
    }
    const size_t bytes = (size_t)in->count * esize;
    const uint64_t t0 = wp_now_ns();
    if (!(*owned = wp_buf_alloc(be, bytes ? bytes : 16, err))) return -1;
    if (bytes && wp_buf_write(*owned, 0, in->host ? in->host : in->data, bytes, err)) return -1;
    *upload_us += wp_us_since(t0);
    *dev = *owned;
    return 0;
}

/* "output": json, b64 or buffer; by default the values' form, as other arrays (b64 for data_b64). */
static int output_form(const cJSON *body, data_form in_form, data_form *form, wp_err *err) {
    const cJSON *o = wp_json_get(body, "output");
    const char *v = o ? (cJSON_IsString(o) ? o->valuestring : "") : in_form == FORM_B64 ? "b64" : "json";
    *form = !strcmp(v, "json")     ? FORM_JSON
            : !strcmp(v, "b64")    ? FORM_B64
            : !strcmp(v, "buffer") ? FORM_BUFFER
                                   : FORM_RAW;
    if (*form == FORM_RAW)
        return WP_FAIL(err, 400, "bad_value", "output", "reduce_by_key's output is json, b64 or buffer");
    return 0;
}

/* One result array copied into a new buffer of the registry, not yet committed (NULL: err says why). */
static wp_buf *result_buffer(wp_app *app, const wp_user *who, wp_backend *be, const wp_buf *src, wp_type t,
                             uint64_t runs, wp_err *err) {
    wp_buf *b = wp_buffers_create(app->buffers, who, be, t, runs, err);
    if (b && runs && wp_buf_copy(b, 0, src, 0, (size_t)runs * wp_type_size(t), err)) {
        wp_buffers_abort(app->buffers, b);
        return NULL;
    }
    return b;
}

/* A created buffer committed into o[name] = {"buffer": ID, "type", "count"} (commit frees it on failure). */
static int result_commit(wp_app *app, wp_buf *b, cJSON *o, const char *name, wp_buffer_info *info, wp_err *err) {
    if (wp_buffers_commit(app->buffers, b, 0, info, err)) return -1;
    cJSON *r = wp_json_obj_k(o, name);
    wp_json_str_k(r, "buffer", info->id);
    wp_json_str_k(r, "type", wp_type_name(info->type));
    wp_json_num_k(r, "count", (double)info->count);
    return 0;
}

/* "output": "buffer": both arrays made (and charged to the quota) before either is committed, so a
 * refusal (507 quota_exceeded for the values) leaves no buffer behind that the answer does not name. */
static int result_buffers(wp_app *app, const wp_user *who, wp_backend *be, const wp_spec *s, const bykey_req *k,
                          cJSON *o, wp_err *err) {
    const uint64_t runs = k->res.runs;
    wp_buf *kb = result_buffer(app, who, be, k->out_keys, s->data.keys, runs, err);
    wp_buf *vb = kb ? result_buffer(app, who, be, k->out_values, s->type, runs, err) : NULL;
    if (!vb) {
        if (kb) wp_buffers_abort(app->buffers, kb);
        return -1;
    }
    wp_buffer_info ki;
    if (result_commit(app, kb, o, "keys", &ki, err)) {
        wp_buffers_abort(app->buffers, vb);
        return -1;
    }
    wp_buffer_info vi;
    if (result_commit(app, vb, o, "data", &vi, err)) {
        wp_buffers_delete(app->buffers, who, ki.id, &vi, &(wp_err){0});
        return -1;
    }
    return 0;
}

/* One result array read back: a JSON list (name) or base64 (name_b64). */
static int result_host(cJSON *o, const char *name, const char *name_b64, const wp_buf *src, wp_type t, uint64_t runs,
                       data_form form, uint8_t **host, wp_err *err) {
    const size_t bytes = (size_t)runs * wp_type_size(t);
    if (!(*host = malloc(bytes ? bytes : 1))) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    if (bytes && wp_buf_read(src, 0, *host, bytes, err)) return -1;
    if (form == FORM_B64) {
        char *text = wp_b64_encode(*host, bytes);
        if (!text) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
        wp_json_str_k(o, name_b64, text); /* constant names: the adder keeps the pointer */
        free(text);
        return 0;
    }
    cJSON *list = wp_json_values_raw(t, *host, runs); /* as text: no cJSON node per value */
    if (!list) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    cJSON_AddItemToObject(o, name, list);
    return 0;
}

static int add_results(wp_app *app, const wp_user *who, wp_backend *be, const wp_spec *s, data_form form, bykey_req *k,
                       cJSON *o, wp_err *err) {
    const uint64_t runs = k->res.runs, t0 = wp_now_ns();
    wp_json_num_k(o, "runs", (double)runs);
    if (form == FORM_BUFFER) {
        if (result_buffers(app, who, be, s, k, o, err)) return -1;
        k->download_us = wp_us_since(t0);
        return 0;
    }
    if (form == FORM_JSON && runs > WP_BYKEY_JSON_MAX)
        return WP_FAIL(err, 413, "too_many_for_json", "output",
                       "%llu runs are too many for JSON (at most %u): ask for output b64 or buffer",
                       (unsigned long long)runs, WP_BYKEY_JSON_MAX);
    if (result_host(o, "keys", "keys_b64", k->out_keys, s->data.keys, runs, form, &k->host_keys, err) ||
        result_host(o, "data", "data_b64", k->out_values, s->type, runs, form, &k->host_values, err))
        return -1;
    k->download_us = wp_us_since(t0);
    return 0;
}

static cJSON *respond(wp_app *app, const wp_req *req, const reduce_bykey_args *a, bykey_req *k, data_form form,
                      double upload_us, wp_err *err) {
    const wp_spec *s = a->spec;
    const wp_bykey_result *r = &k->res;
    cJSON *o = cJSON_CreateObject();
    wp_json_str_k(o, "family", s->family->name);
    wp_json_str_k(o, "type", wp_type_name(s->type));
    wp_json_str_k(o, "keys_type", wp_type_name(s->data.keys));
    wp_json_str_k(o, "op", s->op.text);
    wp_json_num_k(o, "count", (double)a->data->count);
    if (add_results(app, req->user, a->be, s, form, k, o, err)) {
        cJSON_Delete(o);
        return NULL;
    }
    if (s->type == WP_F16 || s->type == WP_BF16) wp_json_str_k(o, "accumulate", s->data.native ? "native" : "f32");
    wp_json_str_k(o, "backend", wp_backend_name(a->be));
    wp_json_str_k(o, "device", wp_backend_facts(a->be)->name);
    wp_json_str_k(o, "strategy", wp_strategy_name(s->data.strategy));
    wp_json_bool_k(o, "deterministic", true);
    wp_json_num_k(o, "block", r->block);
    wp_json_num_k(o, "grid", r->grid);
    wp_json_str_k(o, "key", r->key_text);
    if (r->hash[0]) wp_json_str_k(o, "hash", r->hash);
    wp_json_str_k(o, "cache", r->compiled ? wp_source_name(r->source) : "none");
    wp_json_num_k(wp_json_obj_k(o, "batch"), "size", 1); /* never batched: one job, one launch */
    cJSON *t = wp_json_obj_k(o, "timing");
    const uint64_t t_body = req->t_body_ns ? req->t_body_ns : req->t_start_ns;
    wp_json_num_k(t, "receive_us", (double)(t_body - req->t_start_ns) / 1e3);
    wp_json_num_k(t, "handoff_us", wp_req_handoff_us(req));
    wp_json_num_k(t, "parse_us", a->parse_us);
    wp_json_num_k(t, "upload_us", a->data->upload_us + k->keys.upload_us + upload_us);
    wp_json_num_k(t, "key_us", r->key_us);
    wp_json_num_k(t, "cache_us", r->cache_us);
    wp_json_num_k(t, "compile_ms", r->compile_ms);
    wp_json_num_k(t, "load_us", r->load_us);
    wp_json_num_k(t, "kernel_us", r->kernel_us);
    wp_json_num_k(t, "download_us", k->download_us);
    wp_json_num_k(t, "total_us", wp_us_since(req->t_start_ns));
    return o;
}

int reduce_bykey(wp_app *app, const wp_req *req, wp_resp *resp, const reduce_bykey_args *a, wp_err *err) {
    bykey_req k = {0};
    data_form form;
    double upload_us = 0;
    const wp_buf *keys = NULL, *values = NULL;
    const uint64_t n = a->data->count;
    int rc = output_form(a->body, a->data->form, &form, err);
    if (rc == 0 && a->check)
        rc = WP_FAIL(err, 400, "bad_value", "check", "reduce_by_key has no \"check\": its results are exact per run");
    if (rc == 0) rc = read_keys(app, req, a->body, a->spec, a->be, n, &k, err);
    if (rc == 0)
        rc = device_input(a->be, &k.keys, wp_type_size(a->spec->data.keys), &k.dev_keys, &keys, &upload_us, err);
    if (rc == 0)
        rc = device_input(a->be, a->data, wp_type_size(a->spec->type), &k.dev_values, &values, &upload_us, err);
    if (rc == 0 && !(k.out_keys = wp_buf_alloc(a->be, n ? (size_t)n * wp_type_size(a->spec->data.keys) : 16, err)))
        rc = -1;
    if (rc == 0 && !(k.out_values = wp_buf_alloc(a->be, n ? (size_t)n * wp_type_size(a->spec->type) : 16, err)))
        rc = -1;
    if (rc == 0) {
        const wp_bykey_job job = {.spec = a->spec,
                                  .keys = keys,
                                  .in = values,
                                  .n = n,
                                  .out_keys = k.out_keys,
                                  .out_values = k.out_values,
                                  .compile_on_emu = a->compile};
        rc = wp_bykey_run(app, a->be, &job, &k.res, err);
    }
    cJSON *o = rc == 0 ? respond(app, req, a, &k, form, upload_us, err) : NULL;
    if (o) {
        wp_resp_note_kernel(resp, wp_backend_name(a->be), k.res.compiled ? wp_source_name(k.res.source) : "none",
                            a->spec->family->name, k.res.hash);
        wp_resp_json(resp, 200, o);
    }
    bykey_free(app, &k);
    return o ? 0 : -1;
}
