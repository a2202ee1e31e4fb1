/* lanes.h — the warp emulator core (docs/semantics.md): how a job's threads fall into warps of 32,
 * which lanes reach a primitive, member/participant masks, width segments and tiles, the shfl.sync
 * source-lane rule and the vote predicates. The family files (shfl.c, vote.c, match.c, redux.c,
 * allreduce.c, permute.c) build their emulate functions from these; families.c lists those functions. */
#ifndef WP_LANES_H
#define WP_LANES_H

#include <stdbool.h>
#include <stdint.h>

#include "family.h"

#define WP_WARP_SIZE 32

/* One warp of a job: job threads base..base+lanes-1 (lanes < 32 for a partial last warp). */
typedef struct {
    int base;        /* job index of lane 0 */
    int lanes;       /* lanes present in the job (threads < n) */
    uint32_t active; /* present lanes whose active[] flag is set: those reach the primitive */
} wp_lanes_warp;

int wp_lanes_warp_count(int n); /* ceil(n / 32) */
void wp_lanes_warp_at(const wp_warp_job *job, int w, wp_lanes_warp *out);

static inline bool wp_lanes_has(uint32_t mask, int lane) { return (mask >> lane) & 1u; }
static inline int wp_lanes_seg(int width, int lane) { return lane & ~(width - 1); } /* segment base */
uint32_t wp_lanes_tile_bits(int width, int lane);                                   /* lanes seg..seg+width-1 */

/* Whether a lane calls the primitive: DEFINED when it does, else INACTIVE (returned early or past n)
 * or NOT_MEMBER (active, not in member_mask: it skips the call). */
static inline wp_why wp_lanes_call_why(const wp_lanes_warp *w, uint32_t member_mask, int lane) {
    if (!wp_lanes_has(w->active, lane)) return WP_WHY_INACTIVE;
    if (!wp_lanes_has(member_mask, lane)) return WP_WHY_NOT_MEMBER;
    return WP_WHY_DEFINED;
}

/* TILED families: the lanes taking part in `lane`'s call, member_mask & tile_bits(lane) & active. */
uint32_t wp_lanes_participants(const wp_lanes_warp *w, uint32_t member_mask, int width, int lane);
/* A warp mask made tile-relative: bit 0 = the first lane of `lane`'s tile. */
uint32_t wp_lanes_tile_relative(uint32_t mask, int width, int lane);

typedef enum { WP_SHFL_IDX, WP_SHFL_UP, WP_SHFL_DOWN, WP_SHFL_BFLY } wp_shfl_mode;

/* The shfl.sync rule for one calling lane with per-lane argument b. Returns the source lane j
 * (0..31), or -1 when j is out of range (pval false: the lane keeps its own value, defined).
 * *why: DEFINED, or SRC_NOT_MEMBER / SRC_INACTIVE when j is in range but not readable (the
 * returned j still names the lane that was read). */
/* Source lane of each mode and whether it is in range (PTX shfl.sync's pval). 64-bit arithmetic so
 * that no argument overflows; an out-of-range j never indexes anything. */
static inline int64_t wp_lanes_shfl_j(wp_shfl_mode mode, int width, int lane, int32_t b, bool *in_range) {
    int64_t seg = wp_lanes_seg(width, lane), last = seg + width - 1, j;
    switch (mode) {
    case WP_SHFL_IDX:
        j = seg | ((uint32_t)b & (uint32_t)(width - 1));
        *in_range = true;
        return j;
    case WP_SHFL_UP:
        j = (int64_t)lane - b;
        *in_range = j >= seg;
        return j;
    case WP_SHFL_DOWN:
        j = (int64_t)lane + b;
        *in_range = j <= last;
        return j;
    case WP_SHFL_BFLY:
        j = (int64_t)((uint32_t)lane ^ (uint32_t)b);
        *in_range = j >= 0 && j <= last;
        return j;
    }
    *in_range = false;
    return -1;
}
static inline int wp_lanes_shfl_src(wp_shfl_mode mode, int width, int lane, int32_t b, uint32_t member_mask,
                                    uint32_t active, wp_why *why) {
    bool in_range;
    int64_t j = wp_lanes_shfl_j(mode, width, lane, b, &in_range);
    *why = WP_WHY_DEFINED;
    if (!in_range) return -1;
    if (!wp_lanes_has(member_mask, (int)j))
        *why = WP_WHY_SRC_NOT_MEMBER;
    else if (!wp_lanes_has(active, (int)j))
        *why = WP_WHY_SRC_INACTIVE;
    return (int)j;
}

/* A vote predicate (WP_PRED_*) on the raw bits x of type t, constants a and b raw bits of t too.
 * Integers compare as signed/unsigned per type, floats as double (f16/bf16 widened exactly);
 * a NaN fails every comparison except ne and nonzero. An unknown kind is false. */
bool wp_lanes_pred(wp_type t, int pred_kind, uint64_t x, uint64_t a, uint64_t b);

/* The value bits of type t in a slot (what a kernel loading a T would see). */
uint64_t wp_lanes_bits(wp_type t, uint64_t slot);

/* Sets the why of every element of job thread t. */
static inline void wp_lanes_set_why(wp_warp_result *res, int elems, int t, wp_why why) {
    for (int e = 0; e < elems; e++) res->why[(size_t)t * elems + e] = (uint8_t)why;
}

/* Calls fn for every lane of every warp of the job that is present (thread < n); `how` is passed
 * through (a family file's variant: shuffle mode, vote kind, ...). */
typedef void (*wp_lanes_fn)(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                            const wp_lanes_warp *warp, int lane, int how);
void wp_lanes_each(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res, wp_lanes_fn fn, int how);

/* The family files' emulate functions (wp_emulate_fn), listed in families.c. */
void wp_emu_shfl(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_shfl_up(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_shfl_down(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_shfl_xor(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_swap(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_vote_all(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_vote_any(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_vote_uni(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_ballot(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_activemask(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_match_any(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_match_all(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_redux(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_warp_allreduce(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);
void wp_emu_ds_permute(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res);  /* permute.c */
void wp_emu_ds_bpermute(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res); /* AMD, emu only */

#endif
