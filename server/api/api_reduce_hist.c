/* api_reduce_hist.c — the histogram family on POST /v1/reduce: its fields ("bins", "range"; a raw
 * body's ?bins=256&range=0,1), the edges table a searching kernel reads, and its answer:
 *   {"counts": ["12", ...] (u64 as strings), "in_range": "N", "out_of_range": "M",
 *    "edges": [lo, ..., hi] (bins + 1 numbers, values of the compare type), "bins": N, "range": [lo, hi]}
 * and "check": the counts against a plain search of numpy's edges (kernels/hist.c). api_reduce.c
 * calls these; the binning itself is kernels/hist.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_reduce_impl.h"
#include "jsonval.h"
#include "util/json.h"
#include "util/jsonout.h"

/* "range": [lo, hi] (numbers), or "lo,hi" (a raw body's query). */
static int parse_range(const cJSON *r, double *lo, double *hi, wp_err *err) {
    if (!r) return WP_FAIL(err, 400, "missing_field", "range", "histogram needs \"range\": [lo, hi]");
    if (cJSON_IsString(r)) {
        char *end = NULL;
        *lo = strtod(r->valuestring, &end);
        if (end != r->valuestring && *end == ',') {
            const char *second = end + 1;
            *hi = strtod(second, &end);
            if (end != second && !*end) return 0;
        }
        return WP_FAIL(err, 400, "bad_range", "range", "range must be [lo, hi] (in a query: range=lo,hi)");
    }
    if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 2 || !cJSON_IsNumber(r->child) || !cJSON_IsNumber(r->child->next))
        return WP_FAIL(err, 400, "bad_range", "range", "range must be two numbers [lo, hi]");
    *lo = r->child->valuedouble;
    *hi = r->child->next->valuedouble;
    return 0;
}

/* "bins": an integer 1..WP_HIST_BINS_MAX (a query's text arrives as a number too). */
static int parse_bins(const cJSON *b, uint64_t *bins, wp_err *err) {
    if (!b) return WP_FAIL(err, 400, "missing_field", "bins", "histogram needs \"bins\": 1..%u", WP_HIST_BINS_MAX);
    long long v;
    if (!cJSON_IsNumber(b) || wp_json_int(b, "bins", 1, WP_HIST_BINS_MAX, &v, err))
        return WP_FAIL(err, 400, "bad_bins", "bins", "bins must be an integer 1..%u", WP_HIST_BINS_MAX);
    *bins = (uint64_t)v;
    return 0;
}

int reduce_hist_parse(const cJSON *body, wp_spec *spec, wp_hist *h, wp_reduce_job *job, wp_err *err) {
    const cJSON *bins_v = wp_json_get(body, "bins");
    const cJSON *range_v = wp_json_get(body, "range");
    if (!(spec->family->flags & WP_F_BINS)) {
        if (bins_v || range_v)
            return WP_FAIL(err, 400, "unknown_field", bins_v ? "bins" : "range", "only family histogram takes %s",
                           bins_v ? "bins" : "range");
        return 0;
    }
    if (wp_json_get(body, "weights"))
        return WP_FAIL(err, 400, "unknown_field", "weights", "histogram takes no weights");
    const cJSON *out = wp_json_get(body, "output");
    if (out && !(cJSON_IsString(out) && !strcmp(out->valuestring, "json")))
        return WP_FAIL(err, 400, "bad_value", "output", "a histogram answers in JSON (output \"json\" or none)");
    uint64_t bins = 0;
    double lo = 0, hi = 0;
    if (parse_bins(bins_v, &bins, err) || parse_range(range_v, &lo, &hi, err) ||
        wp_hist_setup(spec->type, bins, lo, hi, h, err))
        return -1;
    const cJSON *strat = wp_json_get(body, "strategy");
    const bool chosen = strat && cJSON_IsString(strat) && strcmp(strat->valuestring, "auto");
    if (!chosen) spec->data.strategy = bins <= WP_HIST_SMEM_BINS ? WP_STRAT_SMEM : WP_STRAT_ATOMIC;
    if (spec->data.strategy == WP_STRAT_SMEM && bins > WP_HIST_SMEM_BINS)
        return WP_FAIL(err, 400, "bad_bins", "bins", "strategy smem holds at most %u bins (atomic: any)",
                       WP_HIST_SMEM_BINS);
    wp_hist_weights(h, job->weights);
    job->has_weights = true;
    job->groups = bins;
    return 0;
}

int reduce_hist_input(const wp_hist *h, reduce_input *in, wp_err *err) {
    in->groups = h->bins;
    in->offsets_host = malloc((size_t)(h->bins + 1) * sizeof(uint64_t)); /* the edges, as doubles */
    if (!in->offsets_host) return WP_FAIL(err, 500, "out_of_memory", "range", "out of memory");
    for (uint64_t i = 0; i <= h->bins; i++) {
        const double e = wp_hist_edge(h, i);
        memcpy(&in->offsets_host[i], &e, sizeof e);
    }
    return 0;
}

/* Edge value e (of the compare type) as that type's bits, for wp_json_from_bits. */
static uint64_t edge_bits(wp_type et, double e) {
    switch (et) {
    case WP_F32:
        return wp_f32_bits((float)e);
    case WP_F16:
        return wp_f32_to_f16((float)e);
    case WP_BF16:
        return wp_f32_to_bf16((float)e);
    default:
        return wp_f64_bits(e);
    }
}

int reduce_hist_result(cJSON *o, const wp_hist *h, const uint8_t *counts_host, uint64_t n, wp_err *err) {
    wp_jtext t = {0};
    char num[32];
    uint64_t in_range = 0;
    wp_jtext_put(&t, "[", 1);
    for (uint64_t i = 0; i < h->bins; i++) {
        uint64_t c;
        memcpy(&c, counts_host + i * sizeof c, sizeof c);
        in_range += c;
        wp_jtext_add(&t, i ? ",\"" : "\"", i ? 2 : 1);
        wp_jtext_add(&t, num, (size_t)wp_json_fmt_u64(num, c));
        wp_jtext_add(&t, "\"", 1);
    }
    wp_jtext_put(&t, "]", 1);
    cJSON *list = wp_jtext_raw(&t);
    if (!list) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    wp_json_num_k(o, "bins", (double)h->bins);
    cJSON *range = cJSON_AddArrayToObject(o, "range");
    cJSON_AddItemToArray(range, cJSON_CreateNumber(h->lo));
    cJSON_AddItemToArray(range, cJSON_CreateNumber(h->hi));
    cJSON_AddItemToObject(o, "counts", list);
    cJSON_AddItemToObject(o, "in_range", wp_json_from_bits(WP_U64, in_range));
    cJSON_AddItemToObject(o, "out_of_range", wp_json_from_bits(WP_U64, n - in_range));
    wp_jtext e = {0};
    wp_jtext_put(&e, "[", 1);
    for (uint64_t i = 0; i <= h->bins; i++) {
        char text[48];
        wp_json_bits_text(h->edge_type, edge_bits(h->edge_type, wp_hist_edge(h, i)), text, sizeof text);
        if (i) wp_jtext_add(&e, ",", 1);
        wp_jtext_add(&e, text, strlen(text));
    }
    wp_jtext_put(&e, "]", 1);
    cJSON *edges = wp_jtext_raw(&e);
    if (!edges) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    cJSON_AddItemToObject(o, "edges", edges);
    wp_json_str_k(o, "edge_type", wp_type_name(h->edge_type));
    wp_json_str_k(o, "binning", h->mode == WP_HIST_FAST ? "fast" : "search");
    return 0;
}

cJSON *reduce_hist_check(const wp_hist *h, const uint8_t *host, uint64_t n, const uint8_t *counts_host) {
    uint64_t *ref = calloc((size_t)h->bins, sizeof *ref);
    cJSON *c = cJSON_CreateObject();
    if (!ref || !c) {
        free(ref);
        return c;
    }
    for (uint64_t i = 0; i < n; i++) {
        const int64_t b = wp_hist_bin_ref(h, wp_data_load(h->type, host, i));
        if (b >= 0) ref[b]++;
    }
    uint64_t mismatched = 0;
    for (uint64_t i = 0; i < h->bins; i++) {
        uint64_t got;
        memcpy(&got, counts_host + i * sizeof got, sizeof got);
        mismatched += got != ref[i];
    }
    free(ref);
    wp_json_str_k(c, "reference", "numpy's edges, searched on the host");
    wp_json_num_k(c, "mismatched_bins", (double)mismatched);
    wp_json_bool_k(c, "exact", mismatched == 0);
    return c;
}
