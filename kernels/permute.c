/* permute.c — AMD's LDS cross-lane permutes as emulator-only families (docs/semantics.md, "ds_permute,
 * ds_bpermute"): ds_permute_b32, the forward permute (lane i pushes its value to lane addr[i]/4; on a
 * collision the highest lane wins; an active lane nobody wrote gets 0), and ds_bpermute_b32, the
 * backward permute (lane i pulls from lane addr[i]/4; reading an inactive lane gives 0). Threads form
 * waves of `width` lanes (32 or 64); EXEC is the active lanes. No CUDA template: NVIDIA has no forward
 * permute, and the backward one is __shfl_sync. */
#include "lanes.h"
#include "spec.h"

typedef enum { PERMUTE_PUSH, PERMUTE_PULL } permute_dir;

/* The lane a byte address names: address / 4 modulo the wave size. The two low bits and every bit
 * above the wave are ignored, so addresses wrap modulo wave * 4; the register is unsigned, so -4 names
 * the last lane. */
static int addr_lane(int32_t addr, int wave) { return (int)(((uint32_t)addr >> 2) & (uint32_t)(wave - 1)); }

/* One wave: threads base..base+lanes-1 (lanes < wave for a partial last wave; missing lanes count as
 * inactive, like lanes that returned early). */
static void permute_wave(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, int base, int lanes, int wave,
                         permute_dir dir) {
    uint64_t exec = 0;
    for (int l = 0; l < lanes; l++)
        if (!job->active || job->active[base + l]) exec |= 1ull << l;
    int from[WP_WAVE_MAX]; /* the lane whose value each lane receives, or WP_SRC_NONE */
    for (int l = 0; l < wave; l++) from[l] = WP_SRC_NONE;
    for (int l = 0; l < lanes; l++) {
        if (!((exec >> l) & 1)) continue; /* a disabled lane neither writes nor reads */
        int32_t addr = job->arg ? job->arg[base + l] : s->family->arg_default;
        int j = addr_lane(addr, wave);
        if (dir == PERMUTE_PUSH)
            from[j] = l; /* ascending order: the highest writer is the last */
        else if ((exec >> j) & 1)
            from[l] = j;
    }
    int elems = job->elems;
    for (int l = 0; l < lanes; l++) {
        int t = base + l;
        if (!((exec >> l) & 1)) { /* EXEC off: the destination register is not written */
            wp_lanes_set_why(res, elems, t, WP_WHY_INACTIVE);
            continue;
        }
        res->src[t] = from[l];
        for (int e = 0; e < elems; e++) {
            size_t slot = (size_t)t * elems + e;
            res->out[slot] =
                from[l] == WP_SRC_NONE ? 0 : wp_lanes_bits(s->type, job->in[(size_t)(base + from[l]) * elems + e]);
            res->why[slot] = WP_WHY_DEFINED;
        }
    }
}

static void permute(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, permute_dir dir) {
    int wave = s->width;
    if (wave < 1 || wave > WP_WAVE_MAX || (wave & (wave - 1))) wave = WP_WAVE_MAX; /* validated before; never 0 */
    for (int base = 0; base < job->n; base += wave)
        permute_wave(s, job, res, base, job->n - base < wave ? job->n - base : wave, wave, dir);
}

void wp_emu_ds_permute(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    permute(s, job, res, PERMUTE_PUSH);
}
void wp_emu_ds_bpermute(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    permute(s, job, res, PERMUTE_PULL);
}
