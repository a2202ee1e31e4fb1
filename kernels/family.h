/* family.h — a kernel family is one row: its name, template, allowed types/widths/args, how its
 * output reads, and its CPU reference (the emulator's semantics). The HTTP schema, validation, the
 * compiler and the emulator all read the same row. One kernels/X.c per family group. */
#ifndef WP_FAMILY_H
#define WP_FAMILY_H

#include <stdint.h>

#include "types.h"
#include "wp_abi.h"

struct wp_spec;
struct wp_data_plan;
struct wp_data_params;

/* Widths as a bitmask of log2(width): 1..32 -> bits 0..5. */
#define WP_W_ALL 0x3fu
#define WP_W_32 0x20u
#define WP_W_64 0x40u /* WP_F_WAVE families only: an AMD wave64 */
#define WP_WAVE_MAX 64
/* Any integer width 1..32, not only powers of two (CUB's logical warps: the data-parallel warp_reduce
 * and warp_scan). The shuffle primitives keep the power-of-two rule: it is the hardware's. */
#define WP_W_ANY 0x80u
#define WP_W_ANY_MAX 32
/* block_reduce / block_scan (WP_F_BLOCK_GROUP): the group is `block` threads, any integer 1..this, as CUB's
 * BlockReduce/BlockScan take any block size; it runs in a block of that many threads rounded up to 32. */
#define WP_GROUP_BLOCK_MAX 1024

enum {
    WP_F_OP = 1u << 0,       /* takes `op` (builtin list or expression) */
    WP_F_PRED = 1u << 1,     /* takes a vote predicate */
    WP_F_ARRAY = 1u << 2,    /* a lane's input may be an array of up to WP_MAX_ELEMS */
    WP_F_SWAP = 1u << 3,     /* takes `first` and `second` */
    WP_F_NO_MASK = 1u << 4,  /* takes no member mask (activemask): mask must be 0xffffffff */
    WP_F_TILED = 1u << 5,    /* width < 32 means cooperative-groups tiles: mask & tile, results tile-relative */
    WP_F_NO_INPUT = 1u << 6, /* reads no input values (activemask) */
    /* Data-parallel families (kernels/data.h): jobs over n packed elements, not 32-lane primitives.
     * /v1/warp refuses them; /v1/reduce, /v1/scan and the engine (server/engine/reduce.c) run them. */
    WP_F_DATA = 1u << 7,
    WP_F_SCAN = 1u << 8,         /* inclusive/exclusive, optional init */
    WP_F_WIDTH_GROUP = 1u << 9,  /* works on groups of `width` consecutive elements */
    WP_F_BLOCK_GROUP = 1u << 10, /* works on groups of `block` consecutive elements */
    WP_F_SEGMENTS = 1u << 11,    /* groups given by offsets */
    WP_F_RADIUS = 1u << 12,      /* stencil: radius and weights */
    WP_F_ACCUM = 1u << 13,       /* f16/bf16 accumulate in f32 unless "accumulate":"native" */
    /* `width` is the wave size (32 or 64, AMD): lanes form waves of `width` threads instead of warps of
     * 32; src[] counts lanes within the wave. Used with WP_F_NO_MASK (EXEC is the active lanes). */
    WP_F_WAVE = 1u << 14,
    /* takes "map" (transform-reduce): an expression over x (and y, a second input) applied to each
     * element before the operator (wp_data_spec.map) */
    WP_F_MAP = 1u << 15,
    /* `op` may also name a statistic or norm (mean, var, std, norm1, norm2, norminf, count_nonzero:
     * kernels/stats.h), run by the stats kernels (templates/stats.cuh) over the family's pass. */
    WP_F_STATS = 1u << 16,
    WP_F_KEYS = 1u << 17, /* reduce_by_key: a second input of integer keys ("keys"), runs of equal keys */
    WP_F_BINS = 1u << 18, /* histogram: "bins" and "range" (kernels/hist.h); counts, no op */
    /* its batched kernel serves as a resident too (kernels/wp_abi.h, WP_DATA_RESIDENT), statistics aside */
    WP_F_RESIDENT = 1u << 19
};

typedef enum {
    WP_OUT_VALUE,    /* a value of the spec's type per element */
    WP_OUT_BOOL,     /* 0/1 per lane */
    WP_OUT_MASK,     /* a 32-bit lane mask per lane */
    WP_OUT_MASK_PRED /* mask per lane, plus a 0/1 predicate in src[] (match_all) */
} wp_out_kind;

enum { WP_BACKEND_CUDA = 1u << 0, WP_BACKEND_EMU = 1u << 1 };

/* Why a lane has no defined result. */
typedef enum {
    WP_WHY_DEFINED = 0,
    WP_WHY_INACTIVE,       /* the lane returned before the primitive (or is past n) */
    WP_WHY_NOT_MEMBER,     /* the lane is active but not in the member mask: it did not call */
    WP_WHY_SRC_INACTIVE,   /* its source lane returned early */
    WP_WHY_SRC_NOT_MEMBER, /* its source lane is not in the member mask */
    WP_WHY_UNDEF_OPERAND   /* a step combined an undefined value (allreduce) */
} wp_why;
const char *wp_why_name(wp_why w); /* "inactive", "not_member", "src_inactive", ... */

/* One run of a warp primitive over n lanes (host memory, layout of wp_abi.h). */
typedef struct {
    int n, elems;
    const uint64_t *in;    /* n*elems */
    const int32_t *arg;    /* n (already expanded from a scalar) */
    const uint8_t *active; /* n */
    int pred_kind;
    uint64_t pred_a, pred_b;
    int first, second;
} wp_warp_job;

typedef struct {
    uint64_t *out; /* n*elems; undefined elements left as they were */
    int32_t *src;  /* n; source lane for shuffles (-1 when the lane kept its own value or n/a;
                      WP_SRC_NONE when it got no lane's value); match_all: predicate */
    uint8_t *why;  /* n*elems; wp_why per element */
} wp_warp_result;

#define WP_SRC_NONE (-2) /* src[]: a defined lane that read no lane (ds_permute: nobody wrote to it) */

typedef void (*wp_emulate_fn)(const struct wp_spec *spec, const wp_warp_job *job, wp_warp_result *res);

typedef struct wp_family {
    const char *name;          /* "shfl_xor" */
    const char *template_file; /* "shfl.cu" in templates/ */
    const char *kernel;        /* C++ template name, instantiated as kernel<T, WIDTH, MASK[, Op]> */
    const char *doc;           /* one line for /v1/families */
    uint32_t types;            /* WP_TBIT set */
    uint32_t widths;           /* WP_W_* */
    const char *arg;           /* run-time argument name ("src_lane", "delta", "lane_mask") or NULL */
    int arg_default;
    int arg_min, arg_max; /* allowed range of the argument */
    unsigned flags;       /* WP_F_* */
    uint32_t ops;         /* WP_OPBIT set of allowed operators (WP_F_OP only) */
    wp_out_kind out;
    unsigned backends; /* WP_BACKEND_* */
    int min_sm;        /* e.g. 80 for redux */
    wp_emulate_fn emulate;
    /* WP_F_DATA only (kernels/data.h): strategies allowed (WP_STRATBIT set) and the default, the
     * default block size, what the kernel writes, its launch plan and its CPU reference. */
    uint32_t strategies;
    int strategy_default;
    int block_default;
    /* The block for n elements when the request names none (NULL: block_default always): a function
     * of n and the type only, so every backend takes the same block and combines in the same order. */
    int (*block_for)(const struct wp_spec *s, uint64_t n);
    int data_out; /* wp_data_out */
    void (*plan)(const struct wp_spec *s, uint64_t n, uint64_t groups, struct wp_data_plan *out);
    void (*data_emulate)(const struct wp_spec *s, const struct wp_data_params *p, const struct wp_data_plan *plan);
} wp_family;

const wp_family *wp_family_find(const char *name);
const wp_family *const *wp_family_list(int *count);

#endif
