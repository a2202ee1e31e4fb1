/* api_reduce_input2.c — the second input of a transform-reduce (a "map" over y, or "op": "dot") on
 * /v1/reduce and /v1/scan: "data2", "data2_b64", "buffer2" or "shm2", the shapes of data, data_b64,
 * buffer and shm, of the first input's type and length (400 naming the field otherwise); and the
 * mapped values that "check" takes its reference over. Called by api_reduce.c only when the request
 * has a map. Owns: nothing past a call (the reduce_input it fills is the request's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_reduce_impl.h"
#include "util/json.h"

static const struct {
    const char *name, *first; /* the field, and the first input's form of the same shape */
} second_forms[] = {{"data2", "data"}, {"data2_b64", "data_b64"}, {"buffer2", "buffer"}, {"shm2", "shm"}};

int reduce_second_form(const cJSON *body, const cJSON **value, const char **name, wp_err *err) {
    *value = NULL;
    *name = NULL;
    for (size_t i = 0; i < WP_ARRAY_LEN(second_forms); i++) {
        const cJSON *v = wp_json_get(body, second_forms[i].name);
        if (!v) continue;
        if (*value)
            return WP_FAIL(err, 400, "bad_request", second_forms[i].name,
                           "give one second input: %s and %s are both given", *name, second_forms[i].name);
        *value = v;
        *name = second_forms[i].name;
    }
    return 0;
}

/* `text` naming the first form at its start ("data[3]", "shm.id", "data_b64 holds"), said of the second. */
static void rename_start(char *text, size_t cap, const char *first, const char *second) {
    size_t n = strlen(first);
    if (strncmp(text, first, n) || (text[n] && !strchr("[. :", text[n]))) return;
    char rest[256];
    snprintf(rest, sizeof rest, "%s", text + n);
    snprintf(text, cap, "%s%s", second, rest);
}

/* An error of the first input's reader, said of the second: "data[3]" -> "data2[3]", "shm.id" -> "shm2.id". */
static int rename_field(wp_err *err, const char *first, const char *second) {
    rename_start(err->field, sizeof err->field, first, second);
    rename_start(err->msg, sizeof err->msg, first, second);
    return -1;
}

/* "buffer2": the registry's buffer, of type t on be, held until the request is over; its first
 * `count` elements when the request gives "count" (the first input is a buffer cut short), else all. */
static int second_buffer(wp_app *app, const wp_user *who, const cJSON *body, const cJSON *v, wp_type t, wp_backend *be,
                         uint64_t count, reduce_input *in2, wp_err *err) {
    if (!cJSON_IsString(v)) return WP_FAIL(err, 400, "wrong_type", "buffer2", "buffer2 must be an id string");
    wp_buffer_info info;
    if (!(in2->held = wp_buffers_get(app->buffers, who, v->valuestring, &info, err))) {
        snprintf(err->field, sizeof err->field, "buffer2");
        return -1;
    }
    if (info.type != t)
        return WP_FAIL(err, 400, "type_mismatch", "buffer2", "buffer %s holds %s, the first input is %s", info.id,
                       wp_type_name(info.type), wp_type_name(t));
    if (wp_buf_backend(in2->held) != be)
        return WP_FAIL(err, 400, "backend_mismatch", "buffer2", "buffer %s lives on %s, the job runs on %s", info.id,
                       wp_backend_name(wp_buf_backend(in2->held)), wp_backend_name(be));
    in2->in = in2->held;
    in2->count = wp_json_get(body, "count") && info.count >= count ? count : info.count;
    in2->form = FORM_BUFFER;
    return 0;
}

int reduce_input_second(wp_app *app, const wp_req *req, const cJSON *body, wp_type t, wp_backend *be, uint64_t count,
                        reduce_input *in2, wp_err *err) {
    const cJSON *v;
    const char *name;
    if (reduce_second_form(body, &v, &name, err)) return -1;
    if (!v) return WP_FAIL(err, 400, "missing_field", "data2", "no second input");
    int rc;
    if (!strcmp(name, "data2"))
        rc = reduce_input_json(app, v, t, in2, err) ? rename_field(err, "data", name) : 0;
    else if (!strcmp(name, "data2_b64"))
        rc = reduce_input_b64(app, v, t, in2, err) ? rename_field(err, "data_b64", name) : 0;
    else if (!strcmp(name, "buffer2"))
        rc = second_buffer(app, req->user, body, v, t, be, count, in2, err);
    else
        rc = reduce_input_shm(app, req, v, t, be, false, in2, err) ? rename_field(err, "shm", name) : 0;
    if (rc) return -1;
    if (in2->host) in2->data = in2->host;
    if (in2->count != count)
        return WP_FAIL(err, 400, "bad_length", name,
                       "%s holds %llu elements, the first input %llu: give the same length", name,
                       (unsigned long long)in2->count, (unsigned long long)count);
    return 0;
}

uint8_t *reduce_map_host(const wp_spec *s, const uint8_t *x, reduce_input *in2, uint64_t n, wp_err *err) {
    const size_t esize = wp_type_size(s->type);
    if (s->data.map_y && !in2->data) { /* a buffer (or a region moved by DMA): read it back */
        if (!(in2->host = malloc((size_t)n * esize + 1)))
            return WP_FAIL(err, 500, "out_of_memory", "", "out of memory"), NULL;
        if (wp_buf_read(in2->in, 0, in2->host, (size_t)n * esize, err)) return NULL;
        in2->data = in2->host;
    }
    uint8_t *mapped = malloc((size_t)n * esize + 1);
    if (!mapped) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory"), NULL;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t xi = wp_data_load(s->type, x, i), yi = s->data.map_y ? wp_data_load(s->type, in2->data, i) : 0;
        wp_data_store(s->type, mapped, i, wp_op_apply(&s->data.map, s->type, xi, yi));
    }
    return mapped;
}
