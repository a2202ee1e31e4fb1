/* test_hist.c — the histogram family's host side (kernels/hist.c): the checks of wp_hist_setup, numpy's
 * edges, and the emulator's bins — by the fast formula where setup chose it and by the search of the
 * edges table — against a plain search of the edges, on adversarial values (hist_values.h) for every
 * type over ranges that round unevenly, bins 1..65536. The counts against numpy itself are the API
 * cases' (tests/api/cases/histogram.json, made by tests/api/gen/make_hist_cases.py). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist_values.h"
#include "kernels/spec.h"
#include "t.h"

static void test_setup_errors(void) {
    T_CASE("setup errors");
    wp_hist h;
    wp_err err = {0};
    CHECK(wp_hist_setup(WP_F32, 0, 0, 1, &h, &err) == -1 && !strcmp(err.field, "bins"));
    CHECK(wp_hist_setup(WP_F32, WP_HIST_BINS_MAX + 1, 0, 1, &h, &err) == -1 && !strcmp(err.field, "bins"));
    CHECK(wp_hist_setup(WP_F32, 4, 1, 1, &h, &err) == -1 && !strcmp(err.field, "range"));
    CHECK(wp_hist_setup(WP_F32, 4, 2, 1, &h, &err) == -1 && !strcmp(err.code, "bad_range"));
    CHECK(wp_hist_setup(WP_F32, 4, 0, INFINITY, &h, &err) == -1 && !strcmp(err.field, "range"));
    CHECK(wp_hist_setup(WP_F32, 4, NAN, 1, &h, &err) == -1 && !strcmp(err.field, "range"));
    CHECK(wp_hist_setup(WP_F32, 4, 0, 1e39, &h, &err) == -1 && !strcmp(err.field, "range")); /* inf in f32 */
    CHECK(wp_hist_setup(WP_F64, 4, 0, 1e39, &h, &err) == 0);
    CHECK(wp_hist_setup(WP_F16, 4, 0, 70000, &h, &err) == -1 && !strcmp(err.field, "range"));
    CHECK(wp_hist_setup(WP_F64, 4, -1.7e308, 1.7e308, &h, &err) == -1); /* hi - lo overflows */
    /* 1000 bins over [1000, 1001] repeat edges in f32 (its step there is 2^-14): numpy goes on, we refuse */
    CHECK(wp_hist_setup(WP_F32, 100000, 1000, 1001, &h, &err) == -1 && !strcmp(err.code, "bad_bins"));
    CHECK(wp_hist_setup(WP_F64, 100000, 1000, 1001, &h, &err) == 0);
    CHECK(wp_hist_setup(WP_F32, WP_HIST_BINS_MAX, 0, 1, &h, &err) == 0);
}

static void test_edges(void) {
    T_CASE("edges: numpy's linspace, rounded to the compare type");
    wp_hist h;
    wp_err err = {0};
    CHECK(wp_hist_setup(WP_F32, 3, 0, 1, &h, &err) == 0);
    CHECK(wp_hist_edge(&h, 0) == 0 && wp_hist_edge(&h, 3) == 1);
    CHECK(wp_hist_edge(&h, 1) == (double)(float)(1.0 / 3) && wp_hist_edge(&h, 2) == (double)(float)(2.0 / 3));
    CHECK(h.edge_type == WP_F32 && h.mode == WP_HIST_FAST);
    CHECK(wp_hist_setup(WP_I64, 3, 0, 1, &h, &err) == 0 && h.edge_type == WP_F64);
    CHECK(wp_hist_edge(&h, 1) == 1.0 / 3);
    CHECK(wp_hist_setup(WP_F16, 3, 0.1, 0.7, &h, &err) == 0 && h.edge_type == WP_F16);
    CHECK(wp_hist_edge(&h, 0) == (double)wp_f16_to_f32(wp_f32_to_f16(0.1f)));
    /* lo = -0.0: linspace's 0 * step + lo is +0.0 */
    CHECK(wp_hist_setup(WP_F32, 2, -0.0, 1, &h, &err) == 0 && !signbit(wp_hist_edge(&h, 0)));
}

/* Counts of vals by the emulator (in h's mode, or forced to search) and by the plain search. */
static int compare(const wp_hist *h, const uint64_t *vals, uint64_t n, int force_search) {
    wp_spec s = {.family = wp_family_find("histogram"), .type = h->type, .width = 32, .mask = 0xffffffffu};
    s.data.block = 256;
    s.data.strategy = WP_STRAT_SMEM;
    void *packed = malloc(n * 8 + 8);
    uint64_t *counts = calloc(h->bins, 8), *ref = calloc(h->bins, 8);
    double *edges = malloc((h->bins + 1) * sizeof *edges);
    int bad = 0;
    if (!packed || !counts || !ref || !edges) bad = 1;
    for (uint64_t i = 0; !bad && i <= h->bins; i++) edges[i] = wp_hist_edge(h, i);
    if (!bad) {
        hv_pack(h->type, vals, n, packed);
        wp_data_params p = {.in = (uintptr_t)packed, .out = (uintptr_t)counts, .aux = (uintptr_t)edges, .n = n};
        p.groups = h->bins;
        wp_hist_weights(h, p.weights);
        if (force_search) p.weights[WP_HIST_W_MODE] = WP_HIST_SEARCH;
        wp_data_plan plan;
        wp_plan_histogram(&s, n, h->bins, &plan);
        wp_emu_histogram(&s, &p, &plan);
        for (uint64_t i = 0; i < n; i++) {
            const int64_t b = wp_hist_bin_ref(h, vals[i]);
            if (b >= 0) ref[b]++;
        }
        for (uint64_t i = 0; i < h->bins; i++) bad += counts[i] != ref[i];
    }
    free(packed);
    free(counts);
    free(ref);
    free(edges);
    return bad;
}

static void test_bins(void) {
    static const double ranges[][2] = {{0, 1},     {-1, 1},       {0.1, 0.7},   {-3.3, 7.7},     {1000, 1001},
                                       {0, 1e-38}, {-1e30, 1e30}, {1, 1.0001},  {-2.5, -0.5},    {0.3, 100.9},
                                       {-1e-3, 0}, {7, 13},       {1e-5, 2e-5}, {-65000, 65000}, {123.456, 789.012}};
    static const uint64_t bins_list[] = {1, 2, 3, 7, 10, 100, 255, 256, 1000, 4096, 65536};
    uint64_t *vals = malloc(200000 * sizeof *vals);
    uint64_t seed = 21, fast = 0, search = 0;
    T_CASE("bins: fast formula and edge search against a plain search");
    for (int t = 0; vals && t < WP_TYPE_COUNT; t++)
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
            for (size_t b = 0; b < sizeof bins_list / sizeof bins_list[0]; b++) {
                if (bins_list[b] > 4096 && t != WP_F32 && t != WP_I32) continue; /* the most bins: two types */
                double lo = ranges[r][0], hi = ranges[r][1];
                if (wp_type_is_int((wp_type)t)) lo = floor(lo * 1000), hi = ceil(hi * 1000) + 17;
                wp_hist h;
                wp_err err = {0};
                if (wp_hist_setup((wp_type)t, bins_list[b], lo, hi, &h, &err)) continue; /* repeated edges */
                fast += h.mode == WP_HIST_FAST;
                search += h.mode == WP_HIST_SEARCH;
                const uint64_t n = hv_fill(&h, vals, 200000, 512, seed++);
                CHECKF(compare(&h, vals, n, 0) == 0, "%s [%g, %g] %llu bins (%s)", wp_type_name((wp_type)t), lo, hi,
                       (unsigned long long)h.bins, h.mode == WP_HIST_FAST ? "fast" : "search");
                CHECKF(compare(&h, vals, n, 1) == 0, "%s [%g, %g] %llu bins forced to search", wp_type_name((wp_type)t),
                       lo, hi, (unsigned long long)h.bins);
            }
    CHECKF(fast > search, "the fast formula is the common case (%llu fast, %llu search)", (unsigned long long)fast,
           (unsigned long long)search);
    free(vals);
}

/* wp_plan_fit_device (data.c): the grid cut to the blocks a device holds at once, never raised. */
static void test_fit_device(void) {
    T_CASE("fit_device");
    wp_data_plan p = {.grid = 1024, .block = 512, .smem = 1024};
    wp_plan_fit_device(&p, 132); /* 4 blocks of 512 an SM by threads; 228 KiB / 2 KiB by shared memory */
    CHECKF(p.grid == 528, "grid %u", p.grid);
    p = (wp_data_plan){.grid = 1024, .block = 256, .smem = 64u << 10};
    wp_plan_fit_device(&p, 132); /* 8 blocks of 256 by threads, but 64 KiB of counts: 3 an SM */
    CHECKF(p.grid == 396, "grid %u", p.grid);
    p = (wp_data_plan){.grid = 1024, .block = 1024, .smem = 0};
    wp_plan_fit_device(&p, 100);
    CHECKF(p.grid == 200, "grid %u", p.grid);
    p = (wp_data_plan){.grid = 7, .block = 512, .smem = 1024};
    wp_plan_fit_device(&p, 132); /* a small grid stays */
    CHECKF(p.grid == 7, "grid %u", p.grid);
    p = (wp_data_plan){.grid = 1024, .block = 64, .smem = 0};
    wp_plan_fit_device(&p, 0); /* no count known: one SM's worth, 32 blocks at most */
    CHECKF(p.grid == 32, "grid %u", p.grid);
}

int main(void) {
    test_fit_device();
    test_setup_errors();
    test_edges();
    test_bins();
    return t_done("hist");
}
