/* warp_grid.c — the device layout and launch parameters of a /v1/warp run (warp_grid.h).
 * Owns: nothing (pure functions). */
#include "warp_grid.h"

#include <string.h>

#define WARP_GRID_ALIGN 256

static size_t align_up(size_t x) { return (x + WARP_GRID_ALIGN - 1) & ~(size_t)(WARP_GRID_ALIGN - 1); }

wp_warp_layout wp_warp_layout_for(int lanes, int elems) {
    wp_warp_layout l;
    size_t values = (size_t)lanes * (size_t)elems * sizeof(uint64_t);
    l.out = 0;
    l.src = align_up(values);
    l.download = l.src + (size_t)lanes * sizeof(int32_t);
    l.in = align_up(l.download);
    l.arg = align_up(l.in + values);
    l.active = align_up(l.arg + (size_t)lanes * sizeof(int32_t));
    l.total = align_up(l.active + (size_t)lanes);
    return l;
}

void wp_warp_image_put(unsigned char *h, const wp_warp_layout *l, const wp_warp_job *job, int lane, int lanes) {
    const size_t n = (size_t)job->n, e = (size_t)job->elems, at = (size_t)lane, pad = (size_t)lanes;
    for (size_t k = 0; k < pad * e; k++) ((uint64_t *)(h + l->out))[at * e + k] = WP_WARP_POISON;
    memset(h + l->src + at * sizeof(int32_t), 0xff, pad * sizeof(int32_t));
    memset(h + l->in + at * e * sizeof(uint64_t), 0, pad * e * sizeof(uint64_t));
    if (job->in) memcpy(h + l->in + at * e * sizeof(uint64_t), job->in, n * e * sizeof(uint64_t));
    memset(h + l->arg + at * sizeof(int32_t), 0, pad * sizeof(int32_t));
    if (job->arg) memcpy(h + l->arg + at * sizeof(int32_t), job->arg, n * sizeof(int32_t));
    memset(h + l->active + at, 0, pad);
    if (job->active)
        memcpy(h + l->active + at, job->active, n);
    else
        memset(h + l->active + at, 1, n);
}

wp_warp_params wp_warp_params_at(uint64_t base, const wp_warp_layout *l, const wp_warp_job *job, int lanes) {
    return (wp_warp_params){.in = base + l->in,
                            .out = base + l->out,
                            .src = base + l->src,
                            .arg = base + l->arg,
                            .active = base + l->active,
                            .pred_a = job->pred_a,
                            .pred_b = job->pred_b,
                            .n = lanes,
                            .elems = job->elems,
                            .pred_kind = job->pred_kind,
                            .first = job->first,
                            .second = job->second};
}
