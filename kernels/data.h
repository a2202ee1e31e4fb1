/* data.h — data-parallel families: reductions, scans, argmin/argmax, segmented reduce, stencil and
 * generate. Unlike the warp primitives (one block of up to 1024 lanes, 8-byte slots), these run over
 * n packed elements of a buffer with a grid of blocks. Each family file (reduce.c, scan.c,
 * stencil.c, generate.c) gives its launch plan and its CPU reference, which follows the kernel's
 * combining order exactly (docs/semantics.md, "Data-parallel families"), so the emulator gives the
 * GPU's bits: integers always, floats wherever the strategy fixes the order (all but atomic). */
#ifndef WP_DATA_H
#define WP_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"
#include "wp_abi.h"

struct wp_spec;

#define WP_STRAT_AUTO 0 /* a zeroed spec asks for the family's default strategy */
#define WP_STRATBIT(s) (1u << (s))

/* What a family writes to p->out. */
typedef enum {
    WP_DATA_VALUE,  /* one accumulator value (device_reduce) */
    WP_DATA_GROUPS, /* one T per group (warp/block groups, segments) */
    WP_DATA_EACH,   /* one T per element (scans, stencil, generate) */
    WP_DATA_ARG,    /* one {accumulator value, int64 index} pair (argmin/argmax) */
    WP_DATA_RUNS,   /* reduce_by_key: a key and a T per run of equal keys, and the number of runs
                       (server/engine/bykey.c runs it, not wp_reduce_run) */
    WP_DATA_COUNTS  /* one uint64 count per group (histogram: per bin), zeroed before the run */
} wp_data_out;

/* A launch plan: what the engine allocates and how it launches. */
typedef struct wp_data_plan {
    unsigned grid, block, smem; /* grid 0: nothing to launch (n == 0) */
    uint64_t groups;            /* p->groups: outputs, or tiles for device_scan */
    size_t scratch_bytes;       /* device scratch (p->scratch); zeroed once when allocated */
    size_t out_bytes;           /* bytes the kernel writes at p->out */
    unsigned epoch_status;      /* 0, or the bytes of one tile's epoch-stamped status record (device_scan,
                                   WP_TILE_RECORD_*): any other bytes there (another family's partials,
                                   records of the other size) must be zeroed first */
} wp_data_plan;

/* n elements; groups = segments for segmented_reduce (ignored otherwise). */
typedef void (*wp_data_plan_fn)(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
/* Runs the family's CPU reference: p's addresses are host pointers (emu buffers). */
typedef void (*wp_data_emulate_fn)(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);

/* Names of WP_STRAT_*: "gmem", "smem", ...; wp_strategy_parse gives WP_STRAT_AUTO for "auto", -2 when unknown. */
const char *wp_strategy_name(int strat);
int wp_strategy_parse(const char *s);

/* The accumulator type of a data spec: f16/bf16 accumulate in f32 unless native; others in themselves. */
wp_type wp_data_acc_type(const struct wp_spec *s);
/* The element type a data kernel is instantiated for. A signed integer spec whose builtin operator
 * gives the same bits on the unsigned twin (sum, prod, and, or, xor: wp_ops.cuh computes them in the
 * unsigned type, wrapping) runs the unsigned kernel, so i32 and u32 (i64 and u64) share one compile
 * and one cache entry; min, max and expressions keep their own. */
wp_type wp_data_kernel_type(const struct wp_spec *s);
/* Whether the operator gives the same bits in any order: integer builtins are associative and
 * commutative bit for bit (wrapping arithmetic, min/max, bitwise); floats and expressions are not. */
bool wp_data_order_free(const struct wp_spec *s);
/* Whether the strategy's result is the same every run: not atomic, or an order-free operator. */
bool wp_data_deterministic(const struct wp_spec *s);

/* Bytes of one result the family writes to p->out: 8 for counts, else the spec's type's. */
size_t wp_data_out_size(const struct wp_spec *s);

/* Host element <-> accumulator conversions (exact widening; rounding to nearest even back). */
uint64_t wp_data_to_acc(wp_type t, wp_type acc, uint64_t bits);
uint64_t wp_data_from_acc(wp_type t, wp_type acc, uint64_t bits);
/* Loads/stores element i of a packed array of type t (raw bits, zero-extended). */
uint64_t wp_data_load(wp_type t, const void *base, uint64_t i);
void wp_data_store(wp_type t, void *base, uint64_t i, uint64_t bits);

/* generate: the value of element i, exactly as the kernel makes it (counter-based, no state). */
uint64_t wp_generate_value(wp_type t, int kind, uint64_t seed, uint64_t constant_bits, uint64_t i);

/* Plans and references (families.c lists them). */
void wp_plan_device_reduce(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
/* device_reduce's block when the request names none, by the input's size (docs/semantics.md). */
int wp_block_device_reduce(const struct wp_spec *s, uint64_t n);
void wp_plan_group_reduce(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
void wp_plan_segmented(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
void wp_plan_arg(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
void wp_plan_group_scan(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
void wp_plan_device_scan(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
void wp_plan_stencil(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
void wp_plan_generate(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);

void wp_emu_device_reduce(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_group_reduce(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_segmented(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_argmin(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_argmax(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_group_scan(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_device_scan(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_stencil(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
void wp_emu_generate(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);
/* For a family whose result does not depend on the grid (histogram: integer counts), on a device of
 * sms multiprocessors: the plan's grid cut to the blocks resident at once by threads and shared memory
 * (2048 threads and 228 KiB an SM, the H100's and H200's; registers are not counted: a kernel of more
 * than 32 a thread may still need a second wave). H100, histogram of 2^24 f32 in 256 bins: 8 % faster
 * than 1024 blocks (bench/RESULTS.md). The emulator keeps the plan as it is. */
void wp_plan_fit_device(wp_data_plan *plan, int sms);
/* reduce_by_key (bykey.c): out_bytes is room for n runs' values (the keys' twin is the engine's). */
void wp_plan_reduce_by_key(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
/* Its block when the request names none: 512 (H100, bench_bykey: 1.25x faster than 256, as fast as 1024). */
int wp_block_reduce_by_key(const struct wp_spec *s, uint64_t n);
void wp_emu_reduce_by_key(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);

/* The emulators' blocks in parallel (device_reduce's, reduce.c; a statistic's, stats.c): fold(ctx, b0, b1)
 * over blocks [0, grid) in ranges, on up to 8 threads (one when n < 2^16 elements: sysconf reads /sys on
 * every call, a fifth of a small request's CPU). Each block depends on nothing else, so the bits are the
 * same on any number of cores; a range whose thread did not start or whose fold failed (out of memory) is
 * folded again here. False when a fold still fails. */
bool wp_emu_blocks(uint64_t n, unsigned grid, bool (*fold)(const void *ctx, unsigned b0, unsigned b1), const void *ctx);

#endif
