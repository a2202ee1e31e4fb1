/* spec.h — a spec is the full compile-time identity of a kernel: family, type, width, member mask,
 * operator and target arch. Parsed from JSON, validated against the family's row, and printed as
 * canonical key text ("warp_allreduce/f32/w16/m0xffffffff/op=max/sm_90"). */
#ifndef WP_SPEC_H
#define WP_SPEC_H

#include <cjson/cJSON.h>

#include "expr.h"
#include "family.h"
#include "util/common.h"

/* What else a data-parallel family (WP_F_DATA, kernels/data.h) bakes into its kernel; zero for the
 * warp primitives. */
typedef struct {
    int strategy;    /* WP_STRAT_* (resolved: never WP_STRAT_AUTO after wp_spec_validate) */
    int block;       /* threads per block (and the group size of block_* families) */
    bool block_auto; /* block was not given: the family's block_for(n) picks it for each job */
    bool native;     /* f16/bf16 accumulate in the type itself instead of f32 */
    bool exclusive;  /* scans */
    int radius;      /* stencil: 1..WP_STENCIL_MAX_RADIUS */
    wp_type keys;    /* WP_F_KEYS: the keys' type, an integer type (the kernel compares their bits) */
    bool batched; /* the kernel's batched entry (<kernel>_batch: many jobs in one grid, server/engine/batch_reduce.c) */
    /* WP_F_MAP families: "map", an expression over x (and y) applied to each element first; map.expr is
     * NULL when there is none. map_y: it reads y, an element of the job's second input (wp_reduce_job.in2). */
    wp_op map;
    bool map_y;
    int stat; /* WP_F_STATS: a statistic or norm named as the op (WP_STAT_*, kernels/stats.h); 0: an operator */
} wp_data_spec;

typedef struct wp_spec {
    const wp_family *family;
    wp_type type;
    int width;         /* 1..32, power of two (any integer 1..32 where the row has WP_W_ANY) */
    uint32_t mask;     /* member mask */
    wp_op op;          /* families with WP_F_OP; kind WP_OP_SUM otherwise (unused) */
    char arch[16];     /* "sm_90" */
    wp_data_spec data; /* WP_F_DATA families only */
    bool resident;     /* the kernel built to serve as a resident too (compiled with -DWP_RESIDENT:
                          templates/wp_resident.cuh; key ".../resident/sm_90" for a warp family, ".../batch/
                          resident" for a batched data one, WP_F_RESIDENT); never from a request */
} wp_spec;

/* Reads family, type, width, mask, op from a JSON object (and, for data families, strategy, block,
 * accumulate, exclusive, radius: see wp_spec_data_from_json); `arch` is the target. Unknown keys are
 * the caller's business (it knows the endpoint's other fields). Defaults: type = the family's
 * first type, width 32, mask 0xffffffff, op "sum". Errors name the field. */
int wp_spec_from_json(const cJSON *obj, const char *arch, wp_spec *out, wp_err *err);
/* The same with a family and a type for a body that names none (NULL: the rules above), where the
 * endpoint has its defaults: the body itself is read, never edited (util/jsonparse.h). */
int wp_spec_from_json_or(const cJSON *obj, const char *family, const char *type, const char *arch, wp_spec *out,
                         wp_err *err);
int wp_spec_validate(wp_spec *s, wp_err *err); /* checks a filled-in spec against its family */
/* The data-family fields of a JSON object: "strategy" (name or "auto"), "block", "accumulate"
 * ("f32" or "native"), "exclusive" (bool) or "inclusive" (bool), "radius". Absent fields take the
 * family's defaults. Called by wp_spec_from_json; validation happens in wp_spec_validate. */
int wp_spec_data_from_json(const cJSON *obj, wp_spec *out, wp_err *err);
void wp_spec_free(wp_spec *s);
int wp_spec_copy(wp_spec *dst, const wp_spec *src);
/* In place: s's block, the one its family picks for n (block_for) when the request named none
 * (block_auto); else s as it was. */
static inline void wp_spec_size_block(wp_spec *s, uint64_t n) {
    if (s->data.block_auto && s->family->block_for) s->data.block = s->family->block_for(s, n);
}
/* s with that block: s itself, or a shallow copy in *sized (sharing s's operator and map) with it. */
static inline const wp_spec *wp_spec_sized(const wp_spec *s, uint64_t n, wp_spec *sized) {
    if (!s->data.block_auto || !s->family->block_for) return s;
    *sized = *s;
    wp_spec_size_block(sized, n);
    return sized;
}

/* What the compiler is given of a spec fits these (jit.c's buffers); wp_spec_validate refuses a spec
 * whose operator makes either longer (400 bad_op), so a valid spec never fails there. */
#define WP_SPEC_KEY_MAX 640      /* wp_spec_key_text, with its NUL */
#define WP_SPEC_NAME_MAX 512     /* wp_spec_name_expr's name expression */
#define WP_SPEC_PRELUDE_MAX 4096 /* ... and its prelude (an expression functor) */

/* Canonical key text; returns length or -1. */
int wp_spec_key_text(const wp_spec *s, char *buf, size_t n);
/* The name expression to instantiate, e.g. "wp_shfl_xor<int, 16, 0xffffffffu>" or
 * "wp_warp_allreduce<float, 16, 0xffffffffu, wp_op_max<float> >"; *prelude gets any C++ to
 * append after the template text (the operator functor of an expression). Returns 0 or -1. */
int wp_spec_name_expr(const wp_spec *s, char *buf, size_t n, char *prelude, size_t pn);
/* Parses "0xffffffff", "ffffffff", or a JSON number 0..2^32-1. */
int wp_mask_from_json(const cJSON *v, const char *field, uint32_t *out, wp_err *err);

#endif
