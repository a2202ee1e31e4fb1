/* api_reduce_check.c — "check": true of /v1/reduce and /v1/scan: a float64 (integers: exact) reference
 * computed on the CPU from the input, and the result's error against it. Owns: nothing. */
#include <math.h>
#include <string.h>

#include "api_reduce_impl.h"
#include "jsonval.h"
#include "kernels/stats.h"
#include "util/json.h"

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

cJSON *reduce_check_value(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r) {
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

cJSON *reduce_check_arg(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r) {
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
cJSON *reduce_check_array(const wp_spec *s, const uint8_t *host, uint64_t n, const uint8_t *out, uint64_t out_count,
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

/* ---- statistics and norms (kernels/stats.h) ---- */

int reduce_stat_ddof(const cJSON *body, const wp_spec *s, int *ddof, wp_err *err) {
    const cJSON *v = wp_json_get(body, "ddof");
    *ddof = 0;
    if (!v) return 0;
    if (!(s->family->flags & WP_F_OP)) /* histogram, argmin, argmax: no op, so no statistic */
        return WP_FAIL(err, 400, "unknown_field", "ddof", "ddof goes with op var or std (family %s takes no op)",
                       s->family->name);
    if (!wp_stat_takes_ddof(s->data.stat))
        return WP_FAIL(err, 400, "unknown_field", "ddof", "ddof goes with op var or std (the op is %s)", s->op.text);
    if (!cJSON_IsNumber(v) || (v->valuedouble != 0 && v->valuedouble != 1))
        return WP_FAIL(err, 400, "bad_value", "ddof", "ddof must be 0 or 1 (the divisor is count - ddof)");
    *ddof = (int)v->valuedouble;
    return 0;
}

int reduce_stat_result(cJSON *o, const wp_spec *s, const wp_reduce_result *r, int ddof) {
    const int stat = s->data.stat;
    const wp_type vt = wp_stat_value_type(stat, s->type);
    cJSON_AddItemToObject(o, "value", wp_json_from_bits(vt, wp_stat_finish(stat, s->type, r->stat_acc, ddof)));
    wp_json_str_k(o, "value_type", wp_type_name(vt));
    if (wp_stat_takes_ddof(stat)) wp_json_num_k(o, "ddof", ddof);
    wp_json_str_k(wp_json_obj_k(o, "accumulator"), "type", stat == WP_STAT_COUNT_NONZERO ? "u64" : "f64");
    return 0;
}

cJSON *reduce_check_stat(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r, int ddof) {
    const int stat = s->data.stat;
    const wp_type vt = wp_stat_value_type(stat, s->type);
    const double ref = wp_stat_reference(stat, s->type, host, n, ddof);
    const double got = wp_value_to_double(vt, wp_stat_finish(stat, s->type, r->stat_acc, ddof));
    cJSON *o = cJSON_CreateObject();
    if (stat == WP_STAT_COUNT_NONZERO) {
        cJSON_AddItemToObject(o, "reference", wp_json_from_bits(WP_U64, (uint64_t)ref));
        wp_json_bool_k(o, "exact", got == ref);
        return o;
    }
    cJSON_AddItemToObject(o, "reference", wp_json_from_bits(WP_F64, wp_f64_bits(ref)));
    double abs_err = isnan(got) && isnan(ref) ? 0 : fabs(got - ref), rel = ref != 0 ? abs_err / fabs(ref) : abs_err;
    if (isnan(abs_err)) abs_err = rel = INFINITY; /* one is NaN, the other not */
    wp_json_num_k(o, "abs_error", abs_err);
    wp_json_num_k(o, "rel_error", rel);
    return o;
}
