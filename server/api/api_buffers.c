/* api_buffers.c — the HTTP face of buffers.c: upload data once, keep it on the device, run many
 * jobs over it.
 *   PUT    /v1/buffers      raw bytes (Content-Type: application/octet-stream, ?type=f32[&ttl=S][&backend=B]),
 *                           or JSON {"type":"f32", "data":[...] | "data_b64":"..." |
 *                                    "generate":{"kind":"iota"|"random"|"constant","n":N,"seed":S,"value":V},
 *                                    "ttl":S, "backend":"auto"|"cuda"|"emu", "device":N}
 *                           (?device=N, "device":N: on that device; else the least-loaded one;
 *                            ?shard=all|0,1, "shard":"all"|[0,1]: split into contiguous parts, one per
 *                            device, a raw body striped to them as it arrives, generated data made part
 *                            by part on its device)
 *                           -> 201 {"id","type","count","bytes","backend","ttl","expires_in",...} + Location
 *   GET    /v1/buffers      every buffer, with bytes in use and the quota
 *   GET    /v1/buffers/{id} its info; the bytes with Accept: application/octet-stream (or ?data=raw);
 *                           info plus "data" (JSON values) with ?data=1, or "data_b64" with ?data=b64
 *   DELETE /v1/buffers/{id} removes it (freed once no running job uses it)
 * Errors: 400 (bad type, byte length not a multiple of the element size, bad base64, bad value),
 * 404 "unknown_buffer", 507 "quota_exceeded". Values follow jsonval.h; generated data is made on the
 * device by the generate family (counter-based: /v1/reduce's generate with the same kind, n and seed
 * sees the same elements). A download refreshes the TTL; info does not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "engine/buffers.h"
#include "engine/regions.h"
#include "jsonval.h"
#include "kernels/data.h"
#include "util/base64.h"
#include "util/json.h"

#define BUFFERS_PATH "/v1/buffers/"
#define WP_BUFFERS_STAGE_BYTES (1u << 20)      /* host staging between JSON/base64/generated values and the device */
#define WP_BUFFERS_JSON_MAX_COUNT (1u << 22)   /* elements a JSON download may hold; more: octet-stream */
#define WP_BUFFERS_GENERATE_MAX (1LL << 40)    /* largest generate.n (the quota usually says no first) */
#define WP_BUFFERS_SEED_MAX 9007199254740991LL /* 2^53 - 1: exact in JSON */

/* ---------- staging: values -> host chunk -> wp_buf_write ---------- */

typedef struct {
    wp_buf *buf;
    uint8_t *data;
    size_t used, cap;
    uint64_t offset; /* where the next flush lands */
} stager;

static int stage_flush(stager *s, wp_err *err) {
    if (!s->used) return 0;
    if (wp_buf_write(s->buf, (size_t)s->offset, s->data, s->used, err)) return -1;
    s->offset += s->used;
    s->used = 0;
    return 0;
}

/* Appends one value's little-endian bytes. */
static int stage_value(stager *s, uint64_t bits, size_t size, wp_err *err) {
    if (s->used + size > s->cap && stage_flush(s, err)) return -1;
    for (size_t i = 0; i < size; i++) s->data[s->used++] = (uint8_t)(bits >> (8 * i));
    return 0;
}

/* ---------- base64 (server/util/base64.c), decoded straight into the stager ---------- */

/* Whole 4-character groups, a stager-full at a time, so a large upload is never held twice. */
static int b64_decode_to(stager *st, const char *s, size_t out_len, wp_err *err) {
    size_t step = st->cap / 3 * 3;
    for (size_t done = 0; done < out_len; done += step) {
        if (stage_flush(st, err)) return -1;
        size_t k = out_len - done < step ? out_len - done : step;
        wp_b64_decode(s + done / 3 * 4, st->data, k);
        st->used = k;
    }
    return stage_flush(st, err);
}

/* ---------- parameters ---------- */

/* The device a new buffer lives on: backend and "device" pin as for a job (placement.h). */
static int pick_backend(wp_app *app, const char *want, int pinned, wp_backend **out, wp_err *err) {
    return wp_app_pick(app, want, pinned, NULL, out, err);
}

static int parse_type(const char *name, wp_type *out, wp_err *err) {
    if (!name) return WP_FAIL(err, 400, "missing_field", "type", "type is required: i32 u32 i64 u64 f32 f64 f16 bf16");
    int t = wp_type_parse(name);
    if (t < 0)
        return WP_FAIL(err, 400, "bad_type", "type", "type \"%.20s\" is not one of i32 u32 i64 u64 f32 f64 f16 bf16",
                       name);
    *out = (wp_type)t;
    return 0;
}

static int check_ttl(double ttl, wp_err *err) {
    if (!(ttl > 0) || isinf(ttl))
        return WP_FAIL(err, 400, "bad_value", "ttl", "ttl must be a positive number of seconds");
    return 0;
}

static int query_ttl(const wp_req *req, double *out, wp_err *err) {
    const char *v = wp_req_query(req, "ttl");
    *out = 0;
    if (!v) return 0;
    char *end = NULL;
    *out = strtod(v, &end);
    if (!*v || *end) return WP_FAIL(err, 400, "bad_value", "ttl", "ttl \"%.20s\" is not a number of seconds", v);
    return check_ttl(*out, err);
}

static int length_multiple(uint64_t bytes, wp_type t, const char *field, wp_err *err) {
    size_t size = wp_type_size(t);
    if (bytes % size)
        return WP_FAIL(err, 400, "bad_length", field, "%llu bytes are not a whole number of %zu-byte %s elements",
                       (unsigned long long)bytes, size, wp_type_name(t));
    return 0;
}

/* ---------- filling a new buffer from JSON ---------- */

static const char *const generate_fields[] = {"kind", "n", "seed", "value", NULL};

typedef struct {
    int kind; /* WP_GEN_* */
    uint64_t n, seed, value;
} generate_spec;

static int parse_generate(const cJSON *g, wp_type t, generate_spec *out, wp_err *err) {
    if (!cJSON_IsObject(g)) return WP_FAIL(err, 400, "wrong_type", "generate", "generate must be an object");
    if (wp_json_only(g, "generate.", generate_fields, err)) return -1;
    const cJSON *kind = wp_json_get(g, "kind");
    const cJSON *n = wp_json_get(g, "n");
    const cJSON *seed = wp_json_get(g, "seed");
    const cJSON *value = wp_json_get(g, "value");
    if (!cJSON_IsString(kind))
        return WP_FAIL(err, 400, kind ? "wrong_type" : "missing_field", "generate.kind",
                       "generate.kind must be \"iota\", \"random\" or \"constant\"");
    if (!strcmp(kind->valuestring, "iota"))
        out->kind = WP_GEN_IOTA;
    else if (!strcmp(kind->valuestring, "random"))
        out->kind = WP_GEN_RANDOM;
    else if (!strcmp(kind->valuestring, "constant"))
        out->kind = WP_GEN_CONSTANT;
    else
        return WP_FAIL(err, 400, "bad_value", "generate.kind",
                       "generate.kind \"%.20s\" is not \"iota\", \"random\" or \"constant\"", kind->valuestring);
    long long v;
    if (!n) return WP_FAIL(err, 400, "missing_field", "generate.n", "generate.n (the element count) is required");
    if (wp_json_int(n, "generate.n", 0, WP_BUFFERS_GENERATE_MAX, &v, err)) return -1;
    out->n = (uint64_t)v;
    out->seed = 1;
    if (seed && wp_json_int(seed, "generate.seed", 0, WP_BUFFERS_SEED_MAX, &v, err)) return -1;
    if (seed) out->seed = (uint64_t)v;
    if (out->kind == WP_GEN_CONSTANT && !value)
        return WP_FAIL(err, 400, "missing_field", "generate.value", "generate.value is required for \"constant\"");
    if (out->kind != WP_GEN_CONSTANT && value)
        return WP_FAIL(err, 400, "unknown_field", "generate.value", "generate.value is only for \"constant\"");
    if (value && wp_json_to_bits(value, t, "generate.value", &out->value, err)) return -1;
    return 0;
}

/* Made where the buffer lives, by the generate family through the reduce engine: a kernel on cuda
 * (nothing crosses the bus), the C reference in place on emu. A sharded buffer's parts are made each
 * on its device, part i as the elements of the sequence from where it starts: the values are those of
 * the same generate unsharded. */
static int fill_generated(wp_app *app, wp_backend *be, wp_buf *buf, wp_type t, const generate_spec *g, wp_err *err) {
    wp_spec spec = {.family = wp_family_find("generate"), .type = t, .width = 32, .mask = 0xffffffffu};
    spec.data.strategy = WP_STRAT_AUTO;
    snprintf(spec.arch, sizeof spec.arch, "%s", app->arch);
    if (!spec.family) return WP_FAIL(err, 500, "internal", "generate", "the generate family is missing");
    if (wp_spec_validate(&spec, err)) return -1;
    const size_t esize = wp_type_size(t);
    const int parts = wp_buf_shards(buf);
    for (int i = 0; i < (parts ? parts : 1); i++) {
        size_t offset = 0;
        wp_buf *part = parts ? wp_buf_shard(buf, i, &offset) : buf;
        const uint64_t n = parts ? wp_buf_size(part) / esize : g->n;
        if (n == 0) continue; /* an empty part */
        wp_reduce_job job = {.spec = &spec,
                             .n = n,
                             .gen_kind = g->kind,
                             .seed = g->seed,
                             .constant = g->value,
                             .gen_first = offset / esize,
                             .out = part};
        wp_reduce_result r;
        if (wp_reduce_run(app, parts ? wp_buf_backend(part) : be, &job, &r, err)) return -1;
        wp_reduce_result_free(&r);
    }
    return 0;
}

static int fill_list(stager *st, wp_type t, const cJSON *data, wp_err *err) {
    size_t size = wp_type_size(t);
    int i = 0;
    for (const cJSON *v = data->child; v; v = v->next, i++) {
        uint64_t bits;
        if (wp_json_to_bits(v, t, "data", &bits, err)) { /* again with the element's own name */
            char field[32];
            snprintf(field, sizeof field, "data[%d]", i);
            wp_json_to_bits(v, t, field, &bits, err);
            return -1;
        }
        if (stage_value(st, bits, size, err)) return -1;
    }
    return stage_flush(st, err);
}

static const char *const put_fields[] = {"type", "data",    "data_b64", "generate", "shm", "cuda_ipc",
                                         "ttl",  "backend", "device",   "shard",    NULL};

/* The devices a new buffer is split over ("shard"), or none. */
typedef struct {
    int n;
    wp_backend *dev[WP_MAX_DEVICES];
} shard_set;

static wp_buf *create(wp_app *app, const wp_user *who, wp_backend *be, const shard_set *ss, wp_type t, uint64_t count,
                      wp_err *err) {
    return ss->n ? wp_buffers_create_sharded(app->buffers, who, ss->dev, ss->n, t, count, err)
                 : wp_buffers_create(app->buffers, who, be, t, count, err);
}

/* Where a JSON body's buffer goes: "backend", "device" (one device) or "shard" (split over several). */
static int json_placement(wp_app *app, const cJSON *body, const cJSON *backend, wp_backend **be, shard_set *ss,
                          wp_err *err) {
    if (backend && !cJSON_IsString(backend))
        return WP_FAIL(err, 400, "wrong_type", "backend", "backend must be a string");
    int pinned;
    const cJSON *shard = wp_json_get(body, "shard");
    if (wp_placement_pin(body, &pinned, err) ||
        pick_backend(app, backend ? backend->valuestring : NULL, pinned, be, err))
        return -1;
    if (shard && pinned >= 0) return WP_FAIL(err, 400, "bad_shard", "shard", "give shard or device, not both");
    if (shard && (wp_placement_shards(app, shard, NULL, ss->dev, &ss->n, err) || !wp_placement_has(app, *be)))
        return err->code ? -1 : WP_FAIL(err, 400, "bad_shard", "shard", "shard splits over this server's devices only");
    return 0;
}

/* ---- cuda_ipc: a buffer over another process's device allocation (nothing copied) ---- */

static const char *const ipc_fields[] = {"handle", "device", "offset", "count", "type", NULL};
static const char *const ipc_alone[] = {"data", "data_b64", "generate", "shm", "shard", "backend", "device", NULL};

#define IPC_MAX_INT 9007199254740992LL /* 2^53 */
#define WP_IPC_ALIGN 16                /* bytes: what the data kernels' widest loads need */

static int ipc_int(const cJSON *ipc, const char *key, long long lo, long long dflt, long long *out, wp_err *err) {
    char field[32];
    snprintf(field, sizeof field, "cuda_ipc.%s", key);
    const cJSON *v = wp_json_get(ipc, key);
    *out = dflt;
    if (!v && dflt < 0) return WP_FAIL(err, 400, "missing_field", field, "%s is required", field);
    return v ? wp_json_int(v, field, lo, IPC_MAX_INT, out, err) : 0;
}

/* The 64-byte handle from its base64 text. */
static int ipc_handle(const cJSON *ipc, unsigned char out[64], wp_err *err) {
    const cJSON *h = wp_json_get(ipc, "handle");
    size_t n = 0;
    if (!cJSON_IsString(h))
        return WP_FAIL(err, 400, h ? "wrong_type" : "missing_field", "cuda_ipc.handle",
                       "cuda_ipc.handle (base64 of the 64-byte cudaIpcMemHandle_t) must be a string");
    if (wp_b64_check(h->valuestring, strlen(h->valuestring), "cuda_ipc.handle", &n, err)) return -1;
    if (n != 64)
        return WP_FAIL(err, 400, "bad_handle", "cuda_ipc.handle", "cuda_ipc.handle decodes to %zu bytes, not 64", n);
    wp_b64_decode(h->valuestring, out, 64);
    return 0;
}

/* The type: cuda_ipc.type, else the body's (both: they must agree). */
static int ipc_type(const cJSON *ipc, wp_type body_type, bool body_has, wp_type *t, wp_err *err) {
    const cJSON *v = wp_json_get(ipc, "type");
    *t = body_type;
    if (!v && !body_has)
        return WP_FAIL(err, 400, "missing_field", "cuda_ipc.type", "cuda_ipc.type (the elements' type) is required");
    if (!v) return 0;
    if (!cJSON_IsString(v)) return WP_FAIL(err, 400, "wrong_type", "cuda_ipc.type", "cuda_ipc.type must be a string");
    if (parse_type(v->valuestring, t, err)) return -1;
    if (body_has && *t != body_type)
        return WP_FAIL(err, 400, "bad_value", "cuda_ipc.type", "cuda_ipc.type and type disagree");
    return 0;
}

static int put_ipc(wp_app *app, const wp_user *who, const cJSON *body, const cJSON *ipc, wp_type t, double ttl_s,
                   wp_buffer_info *info, wp_err *err) {
    for (int i = 0; ipc_alone[i]; i++)
        if (wp_json_get(body, ipc_alone[i]))
            return WP_FAIL(err, 400, "bad_input", ipc_alone[i], "cuda_ipc takes no %s (its memory is where it is)",
                           ipc_alone[i]);
    if (!cJSON_IsObject(ipc)) return WP_FAIL(err, 400, "wrong_type", "cuda_ipc", "cuda_ipc must be an object");
    unsigned char handle[64];
    long long device, offset, count;
    wp_backend *be = NULL;
    if (wp_json_only(ipc, "cuda_ipc.", ipc_fields, err) || ipc_handle(ipc, handle, err) ||
        ipc_type(ipc, t, wp_json_get(body, "type") != NULL, &t, err) || ipc_int(ipc, "device", 0, 0, &device, err) ||
        ipc_int(ipc, "offset", 0, 0, &offset, err) || ipc_int(ipc, "count", 0, -1, &count, err))
        return -1;
    if (!app->cuda)
        return WP_FAIL(err, 400, "needs_gpu", "cuda_ipc",
                       "a CUDA IPC buffer needs a GPU; this daemon runs on the emulator");
    if (device >= app->n_devices || wp_app_pick(app, "cuda", (int)device, NULL, &be, err))
        return WP_FAIL(err, 400, "bad_device", "cuda_ipc.device", "device %lld is not one this daemon serves (0..%d)",
                       device, app->n_devices - 1);
    size_t esize = wp_type_size(t);
    if (offset % WP_IPC_ALIGN) /* the kernels' vector loads need it: a misaligned one faults the context */
        return WP_FAIL(err, 400, "misaligned", "cuda_ipc.offset",
                       "cuda_ipc.offset %lld is not a multiple of %d bytes (copy the slice to an aligned array)",
                       offset, WP_IPC_ALIGN);
    if ((unsigned long long)count > SIZE_MAX / esize)
        return WP_FAIL(err, 400, "out_of_range", "cuda_ipc.count", "cuda_ipc.count is too large");
    wp_buf *buf = wp_buf_open_ipc(be, handle, (size_t)offset, (size_t)count * esize, err);
    if (!buf || !(buf = wp_buffers_adopt(app->buffers, who, buf, t, (uint64_t)count, err))) return -1;
    return wp_buffers_commit(app->buffers, buf, ttl_s, info, err);
}

/* A JSON body's input: exactly one of data, data_b64, generate, shm (cuda_ipc goes its own way). */
typedef struct {
    const cJSON *data, *b64, *gen, *shm;
    size_t b64_bytes;
    generate_spec g;
    wp_region *region; /* shm: held until the buffer is filled */
    uint64_t region_offset;
} put_input;

static int input_count(wp_app *app, const wp_req *req, put_input *in, wp_type t, wp_backend *be, uint64_t *count,
                       wp_err *err) {
    if (!!in->data + !!in->b64 + !!in->gen + !!in->shm != 1)
        return WP_FAIL(err, 400, "bad_input", "data", "give exactly one of data, data_b64, generate, shm and cuda_ipc");
    if (in->data) {
        if (!cJSON_IsArray(in->data)) return WP_FAIL(err, 400, "wrong_type", "data", "data must be a list of values");
        *count = (uint64_t)cJSON_GetArraySize(in->data);
    } else if (in->b64) {
        if (!cJSON_IsString(in->b64))
            return WP_FAIL(err, 400, "wrong_type", "data_b64", "data_b64 must be a base64 string");
        if (wp_b64_check(in->b64->valuestring, strlen(in->b64->valuestring), "data_b64", &in->b64_bytes, err) ||
            length_multiple(in->b64_bytes, t, "data_b64", err))
            return -1;
        *count = in->b64_bytes / wp_type_size(t);
    } else if (in->gen) {
        if (parse_generate(in->gen, t, &in->g, err) || wp_app_emu_limit(app, be, in->g.n, "generate.n", err)) return -1;
        *count = in->g.n;
    } else if (!(in->region = wp_api_shm_input(app, req, in->shm, t, &in->region_offset, count, err))) {
        return -1;
    }
    return 0;
}

/* The new buffer's bytes from the input (values and base64 through a host stager). */
static int fill_input(wp_app *app, wp_backend *be, wp_buf *buf, wp_type t, const put_input *in, wp_err *err) {
    if (in->gen) return fill_generated(app, be, buf, t, &in->g, err);
    if (in->region) return wp_region_to_buf(in->region, in->region_offset, buf, 0, wp_buf_size(buf), "shm.id", err);
    stager st = {.buf = buf, .cap = WP_BUFFERS_STAGE_BYTES};
    if (!(st.data = malloc(st.cap))) return WP_FAIL(err, 500, "no_memory", "", "out of memory");
    int rc = in->data ? fill_list(&st, t, in->data, err) : b64_decode_to(&st, in->b64->valuestring, in->b64_bytes, err);
    free(st.data);
    return rc;
}

/* type and ttl of a JSON body. */
static int put_common(const cJSON *body, bool ipc, wp_type *t, double *ttl_s, wp_err *err) {
    const cJSON *type = wp_json_get(body, "type");
    const cJSON *ttl = wp_json_get(body, "ttl");
    if (type && !cJSON_IsString(type)) return WP_FAIL(err, 400, "wrong_type", "type", "type must be a string");
    if ((type || !ipc) && parse_type(type ? type->valuestring : NULL, t, err)) return -1; /* ipc: cuda_ipc.type */
    if (ttl && !cJSON_IsNumber(ttl)) return WP_FAIL(err, 400, "wrong_type", "ttl", "ttl must be a number of seconds");
    *ttl_s = ttl ? ttl->valuedouble : 0;
    return ttl ? check_ttl(*ttl_s, err) : 0;
}

/* Creates, fills and commits a buffer from a JSON body. */
static int put_json(wp_app *app, const wp_req *req, wp_buffer_info *info, wp_err *err) {
    cJSON *body = wp_api_parse_body(app, req, err);
    if (!body) return -1;
    int rc = -1;
    wp_buf *buf = NULL;
    put_input in = {.data = wp_json_get(body, "data"),
                    .b64 = wp_json_get(body, "data_b64"),
                    .gen = wp_json_get(body, "generate"),
                    .shm = wp_json_get(body, "shm")};
    const cJSON *ipc = wp_json_get(body, "cuda_ipc");
    wp_type t = WP_F32;
    wp_backend *be;
    double ttl_s = 0;
    shard_set ss = {0};
    uint64_t count = 0;
    if (wp_json_only(body, "", put_fields, err) || put_common(body, ipc != NULL, &t, &ttl_s, err)) goto out;
    if (ipc) {
        rc = put_ipc(app, req->user, body, ipc, t, ttl_s, info, err);
        goto out;
    }
    if (json_placement(app, body, wp_json_get(body, "backend"), &be, &ss, err) ||
        input_count(app, req, &in, t, be, &count, err) || !(buf = create(app, req->user, be, &ss, t, count, err)) ||
        fill_input(app, be, buf, t, &in, err))
        goto out;
    rc = wp_buffers_commit(app->buffers, buf, ttl_s, info, err);
    buf = NULL; /* committed, or freed by a failed commit */
out:
    if (buf) wp_buffers_abort(app->buffers, buf);
    wp_region_put(in.region);
    cJSON_Delete(body);
    return rc;
}

/* ---- raw bytes streamed into the new buffer while they arrive (http.h stream hooks): the quota and
 * the arguments are checked before the body is read ---- */

typedef struct {
    wp_app *app;
    wp_type type;
    wp_backend *be;
    wp_buf *buf; /* created in the registry; NULL once committed */
    wp_buf_stream *up;
} put_sink;

static int raw_args(wp_app *app, const wp_req *req, uint64_t length, wp_type *t, wp_backend **be, shard_set *ss,
                    double *ttl_s, wp_err *err) {
    int pinned;
    const char *shard = wp_req_query(req, "shard");
    ss->n = 0;
    if (parse_type(wp_req_query(req, "type"), t, err) || query_ttl(req, ttl_s, err) ||
        wp_placement_pin_text(wp_req_query(req, "device"), &pinned, err) ||
        pick_backend(app, wp_req_query(req, "backend"), pinned, be, err) || length_multiple(length, *t, "body", err))
        return -1;
    if (shard && pinned >= 0) return WP_FAIL(err, 400, "bad_shard", "shard", "give shard or device, not both");
    if (shard && (wp_placement_shards(app, NULL, shard, ss->dev, &ss->n, err) || !wp_placement_has(app, *be)))
        return err->code ? -1 : WP_FAIL(err, 400, "bad_shard", "shard", "shard splits over this server's devices only");
    return 0;
}

static void *put_open(void *appv, const wp_req *req, uint64_t length, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    double ttl_s;
    shard_set ss;
    put_sink *ps = calloc(1, sizeof *ps);
    if (!ps)
        WP_FAIL(&err, 500, "no_memory", "", "out of memory");
    else if (raw_args(app, req, length, &ps->type, &ps->be, &ss, &ttl_s, &err) == 0 &&
             (ps->buf = create(app, req->user, ps->be, &ss, ps->type, length / wp_type_size(ps->type), &err)) &&
             (ps->up = wp_buf_stream_open(ps->buf, &err))) {
        ps->app = app;
        return ps;
    }
    if (ps && ps->buf) wp_buffers_abort(app->buffers, ps->buf);
    free(ps);
    wp_resp_error(resp, &err);
    return NULL;
}

static int put_write(void *sink, const void *data, size_t len, uint64_t offset, wp_err *err) {
    (void)offset; /* in order: the stream's own */
    return wp_buf_stream_write(((put_sink *)sink)->up, data, len, err);
}

static void put_close(void *sink) {
    put_sink *ps = sink;
    wp_buf_stream_free(ps->up); /* waits for copies into buf */
    if (ps->buf) wp_buffers_abort(ps->app->buffers, ps->buf);
    free(ps);
}

const wp_stream_hooks wp_api_buffers_stream = {put_open, put_write, put_close};

/* Raw bytes: streamed into the buffer as they arrived (put_sink), or written from the request body. */
static int put_raw(wp_app *app, const wp_req *req, wp_buffer_info *info, wp_err *err) {
    wp_type t;
    wp_backend *be;
    double ttl_s;
    shard_set ss;
    if (raw_args(app, req, req->body_len, &t, &be, &ss, &ttl_s, err)) return -1;
    if (req->sink) {
        put_sink *ps = req->sink;
        if (ps->type != t) /* (its device was placed when the body began: ps->be stands) */
            return WP_FAIL(err, 500, "internal", "body", "the body was streamed into another buffer");
        if (wp_buf_stream_end(ps->up, err)) return -1;
        wp_buf *buf = ps->buf;
        ps->buf = NULL; /* committed, or freed by a failed commit */
        return wp_buffers_commit(app->buffers, buf, ttl_s, info, err);
    }
    wp_buf *buf = create(app, req->user, be, &ss, t, req->body_len / wp_type_size(t), err);
    if (!buf) return -1;
    if (req->body_len && wp_buf_write(buf, 0, req->body, req->body_len, err)) {
        wp_buffers_abort(app->buffers, buf);
        return -1;
    }
    return wp_buffers_commit(app->buffers, buf, ttl_s, info, err);
}

/* ---------- views ---------- */

static cJSON *info_json(const wp_buffer_info *b) {
    cJSON *o = cJSON_CreateObject();
    char location[64];
    cJSON_AddStringToObject(o, "id", b->id);
    cJSON_AddStringToObject(o, "owner", b->owner);
    cJSON_AddStringToObject(o, "type", wp_type_name(b->type));
    cJSON_AddNumberToObject(o, "count", (double)b->count);
    cJSON_AddNumberToObject(o, "bytes", (double)b->bytes);
    cJSON_AddStringToObject(o, "backend", b->backend);
    cJSON_AddNumberToObject(o, "device", b->device);
    if (b->shards) {
        cJSON *list = cJSON_AddArrayToObject(o, "shards");
        for (int i = 0; i < b->shards; i++) {
            cJSON *s = cJSON_CreateObject();
            cJSON_AddNumberToObject(s, "device", b->shard[i].device);
            cJSON_AddNumberToObject(s, "offset", (double)b->shard[i].offset);
            cJSON_AddNumberToObject(s, "count", (double)b->shard[i].count);
            cJSON_AddItemToArray(list, s);
        }
    }
    if (b->external) cJSON_AddStringToObject(o, "external", "cuda_ipc");
    cJSON_AddNumberToObject(o, "ttl", b->ttl_s);
    cJSON_AddNumberToObject(o, "expires_in", round(b->expires_in_s * 1000.0) / 1000.0);
    cJSON_AddNumberToObject(o, "users", b->users);
    snprintf(location, sizeof location, "%s%s", BUFFERS_PATH, b->id);
    cJSON_AddStringToObject(o, "location", location);
    return o;
}

static bool is_octet_stream(const char *s) {
    return s && !strncmp(s, "application/octet-stream", 24) && (!s[24] || s[24] == ';' || s[24] == ' ');
}

void wp_api_buffers_put(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_buffer_info info;
    int rc = is_octet_stream(req->content_type) ? put_raw(app, req, &info, &err) : put_json(app, req, &info, &err);
    if (rc) {
        wp_resp_error(resp, &err);
        return;
    }
    snprintf(resp->location, sizeof resp->location, "%s%s", BUFFERS_PATH, info.id);
    wp_resp_json(resp, 201, info_json(&info));
}

void wp_api_buffers_list(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_buffer_info *list;
    size_t n;
    if (wp_buffers_list(app->buffers, req->user, &list, &n, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_buffers_stats st;
    wp_buffers_stats_get(app->buffers, &st);
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "buffers");
    uint64_t own = 0;
    for (size_t i = 0; i < n; i++) {
        cJSON_AddItemToArray(arr, info_json(&list[i]));
        own += list[i].bytes;
    }
    free(list);
    /* an admin sees the daemon's bytes and quota; anyone else their own (others' use is not theirs to see) */
    const bool admin = wp_user_role(req->user) == WP_ROLE_ADMIN;
    const uint64_t user_quota = wp_user_quota(req->user)->buffer_bytes;
    cJSON_AddNumberToObject(o, "count", (double)n);
    cJSON_AddNumberToObject(o, "bytes", (double)(admin ? st.bytes : own));
    cJSON_AddNumberToObject(o, "quota",
                            (double)(admin || !user_quota || user_quota > st.quota ? st.quota : user_quota));
    wp_resp_json(resp, 200, o);
}

/* The id after /v1/buffers/, or NULL (404) when empty or with more path after it. */
static const char *buffer_id(const wp_req *req, wp_err *err) {
    const char *id = req->path + strlen(BUFFERS_PATH);
    if (!*id || strchr(id, '/')) {
        WP_FAIL(err, 404, "unknown_buffer", "buffer", "no buffer at %.80s", req->path);
        return NULL;
    }
    return id;
}

/* The whole buffer in host memory (malloc'd, at least 1 byte). */
static uint8_t *read_all(wp_buf *buf, const wp_buffer_info *info, wp_err *err) {
    uint8_t *bytes = malloc(info->bytes ? (size_t)info->bytes : 1);
    if (!bytes) {
        WP_FAIL(err, 507, "out_of_memory", "", "no host memory for a %llu-byte download",
                (unsigned long long)info->bytes);
        return NULL;
    }
    if (info->bytes && wp_buf_read(buf, 0, bytes, (size_t)info->bytes, err)) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

/* GET with data: the bytes raw, or in the JSON view as values or base64. */
static void get_data(wp_app *app, const wp_user *who, const char *id, const char *form, wp_resp *resp, wp_err *err) {
    wp_buffer_info info;
    wp_buf *buf = wp_buffers_get(app->buffers, who, id, &info, err);
    if (!buf) return;
    info.users--; /* not counting this download */
    uint8_t *bytes = NULL;
    if (strcmp(form, "raw") && info.count > WP_BUFFERS_JSON_MAX_COUNT) {
        WP_FAIL(err, 413, "too_large", "data",
                "%llu elements are too many for JSON (at most %u); download with Accept: application/octet-stream",
                (unsigned long long)info.count, WP_BUFFERS_JSON_MAX_COUNT);
    } else if ((bytes = read_all(buf, &info, err))) {
        if (!strcmp(form, "raw")) {
            resp->status = 200;
            resp->body = (char *)bytes; /* http.c frees it: the one host copy of the data */
            resp->body_len = (size_t)info.bytes;
            resp->content_type = "application/octet-stream";
            bytes = NULL;
        } else {
            cJSON *o = info_json(&info);
            if (!strcmp(form, "b64")) {
                char *text = wp_b64_encode(bytes, (size_t)info.bytes);
                if (text) cJSON_AddStringToObject(o, "data_b64", text);
                free(text);
            } else {
                cJSON_AddItemToObject(o, "data", wp_json_values_raw(info.type, bytes, info.count));
            }
            wp_resp_json(resp, 200, o);
        }
    }
    free(bytes);
    wp_buffers_release(app->buffers, buf);
}

void wp_api_buffer_get(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    const char *id = buffer_id(req, &err);
    const char *data = wp_req_query(req, "data");
    const char *form = NULL;
    if (is_octet_stream(req->accept))
        form = "raw";
    else if (data && (!strcmp(data, "1") || !strcmp(data, "json") || !strcmp(data, "true")))
        form = "json";
    else if (data && (!strcmp(data, "b64") || !strcmp(data, "raw")))
        form = data;
    else if (data && strcmp(data, "0"))
        WP_FAIL(&err, 400, "bad_value", "data", "data must be 1 (JSON values), b64 or raw");
    if (id && !err.status && form) get_data(app, req->user, id, form, resp, &err);
    if (id && !err.status && !form) {
        wp_buffer_info info;
        if (!wp_buffers_info(app->buffers, req->user, id, &info, &err)) wp_resp_json(resp, 200, info_json(&info));
    }
    if (err.status) wp_resp_error(resp, &err);
}

void wp_api_buffer_delete(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_buffer_info info;
    const char *id = buffer_id(req, &err);
    if (!id || wp_buffers_delete(app->buffers, req->user, id, &info, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    cJSON *o = info_json(&info);
    cJSON_AddBoolToObject(o, "deleted", 1);
    wp_resp_json(resp, 200, o);
}
