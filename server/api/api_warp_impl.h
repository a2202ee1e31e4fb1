/* api_warp_impl.h — what api_warp.c (POST /v1/warp: parse, run, answer) and api_warp_lanes.c (the
 * answer's lane lists) share. Threads: as api_warp.c's request (one thread at a time per request). */
#ifndef WP_API_WARP_IMPL_H
#define WP_API_WARP_IMPL_H

#include <stdint.h>

#include "api.h"
#include "util/jsonout.h"

/* A request's lanes as parsed: values (n * elems), shuffle arguments, the active set, and the job. */
typedef struct {
    int n, elems;
    uint64_t *in;
    int32_t *arg;
    uint8_t *active;
    wp_warp_job job;
} warp_input;

/* A run's lanes: outputs (n * elems), source lanes (n) and why a lane is undefined (n * elems). */
typedef struct {
    uint64_t *out;
    int32_t *src;
    uint8_t *why;
    wp_warp_result r;
} warp_output;

/* The answer's lane lists, in their order. Output, source_lane and pred are the reported run's; the
 * others are decided before the device's run ends (the emulator's run and the input). */
enum {
    WARP_L_OUTPUT,
    WARP_L_DEFINED,
    WARP_L_WHY, /* undefined_reason */
    WARP_L_SOURCE,
    WARP_L_PRED,
    WARP_L_LANE_PRED,
    WARP_L_INPUT,
    WARP_L_LISTS
};
/* The answer's lists in [from, to) that the family has, into the open object o (val: the run reported,
 * emu: the emulator's, which says which lanes are defined). */
void warp_lanes_put(wp_jtext *o, const wp_spec *s, const warp_input *w, const warp_output *val, const warp_output *emu,
                    int from, int to);
/* The room one of those lists takes at most: an answer of about 1 KiB more, taken at once, is never
 * grown (a grown answer is a realloc and a copy). */
size_t warp_lanes_room(const warp_input *w);
/* A mask as the answer writes it, "0x%08x" in quotes, at d; returns the end. */
char *warp_put_mask(char *d, uint32_t m);

#endif
