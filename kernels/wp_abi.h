/* wp_abi.h — the one parameter block every warp-primitive kernel takes, shared by the C host code
 * and the CUDA templates (templates/ include it). Passed by value as the kernel's only argument.
 *
 * Memory layout (device or host): values are 8-byte slots holding raw bits, zero-extended, lane-major:
 * in[lane * elems + e]. Mask and bool outputs use one slot per lane (elems slots, only [0] written). */
#ifndef WP_ABI_H
#define WP_ABI_H

#define WP_MAX_LANES 1024 /* 32 warps in one block */
#define WP_MAX_ELEMS 8    /* elements of a lane's small array */

/* Vote predicates: the lane's value compared with constants a (and b). */
enum { WP_PRED_NONZERO = 0, WP_PRED_GT, WP_PRED_GE, WP_PRED_LT, WP_PRED_LE, WP_PRED_EQ, WP_PRED_NE, WP_PRED_BETWEEN };

typedef struct wp_warp_params {
    unsigned long long in;             /* const unsigned long long * : n*elems slots */
    unsigned long long out;            /* unsigned long long * : n*elems slots (kernel writes only lanes that ran) */
    unsigned long long src;            /* int * : n; source lane per lane (shuffles), match_all predicate */
    unsigned long long arg;            /* const int * : n; run-time argument per lane (src_lane/delta/lane_mask) */
    unsigned long long active;         /* const unsigned char * : n; 0 = lane returned before the primitive */
    unsigned long long pred_a, pred_b; /* raw bits of the predicate constants, in the spec's type */
    int n;                             /* lanes; threads >= n return at once */
    int elems;                         /* 1..WP_MAX_ELEMS */
    int pred_kind;                     /* WP_PRED_* */
    int first, second;                 /* swap: element indices */
    int reserved;
    unsigned long long resident; /* 0: one job, the fields above. Else a resident block (below): the
                                    device address of its mailbox; the fields above are unused */
    unsigned resident_idle_us;   /* resident: leaves after this long without a job ... */
    unsigned resident_life_us;   /* ... or, between jobs, this long after its launch */
} wp_warp_params;

/* ---- resident warp kernels (templates/wp_resident.cuh, server/backend/resident_box.h) ------------
 * A warp kernel launched with p.resident set is one warp that stays on the device and takes jobs of
 * one whole warp (32 lanes, all active: server/backend/resident_box.h says why) from a mailbox in
 * mapped page-locked host memory, so a job costs a round trip over the bus instead of a launch. The
 * mailbox is 16-byte lines, each written whole by one store and read whole by one load, word 0 of
 * every line the job's sequence number (1..WP_RESIDENT_STOP - 1): a reader takes a job or a result only
 * when every line it needs carries the number, so neither side needs a fence. Lines (words after the
 * sequence number):
 *   WP_RES_HEAD     n | elems << 8 | pred_kind << 16 | WP_RES_SHORT?, the active lanes' bits,
 *                   first | second << 16 (as int16) when WP_RES_SHORT, else 0
 *   WP_RES_HEAD + 1 pred_a (low, high), first;   WP_RES_HEAD + 2 pred_b (low, high), second
 *                   (read only without WP_RES_SHORT, which says both constants are 0 and first and second
 *                   fit 16 bits: most jobs, whose look is then one line a lane)
 *   WP_RES_IN + lane * elems + e    arg[lane], in (low, high)
 *   WP_RES_STATUS   [last sequence number taken, WP_RESIDENT_EXITED, 0, 0] once the kernel leaves
 *   WP_RES_OUT + lane * elems + e   src[lane], out (low, high): every lane's, WP_WARP_POISON and -1
 *                                   where the kernel did not write
 * The host writes the header last; the sequence number WP_RESIDENT_STOP tells the kernel to leave. */
#define WP_WARP_POISON 0xbadc0ffee0ddf00dull /* out[] pre-fill: a slot the kernel never wrote keeps it */
#define WP_RESIDENT_LANES 32
#define WP_RESIDENT_STOP 0xffffffffu
#define WP_RESIDENT_EXITED 0x45584954u /* "EXIT" */
#define WP_RES_HEAD 0
#define WP_RES_SHORT 0x80000000u /* in the header's word 1 */
#define WP_RES_IN 3
#define WP_RES_STATUS (WP_RES_IN + WP_RESIDENT_LANES * WP_MAX_ELEMS + 1)
#define WP_RES_OUT (WP_RES_STATUS + 8) /* its own 128 bytes apart from the status */
#define WP_RES_LINES (WP_RES_OUT + WP_RESIDENT_LANES * WP_MAX_ELEMS)

/* A data family's batched kernel (WP_F_RESIDENT) serves as a resident too: launched as one block with
 * wp_data_params.reserved == WP_DATA_RESIDENT, in = the mailbox, out = a device buffer of its own (the
 * job's image lands there), n = the idle time, groups = the life time (µs). A job is a batch image
 * (server/engine/batch_reduce.c) of one job of one block, sent as its words that are not zero: the
 * block zeroes the image's bytes in its buffer and writes each word sent at its place, runs the image as a
 * launch of the batched kernel over that buffer would, then relays a region of the buffer back. A tiny
 * reduce's image is 1 KiB, mostly zeros (alignment, the head's counters): about ten lines go over the bus
 * where 86 did. The header is one line, and the block's first warp reads it and the first 31 word lines
 * at each look, one line a lane (a thread's loads go one after another: two a look took half as long
 * again), so a small image is there at the look that sees its header. The same mailbox and status line
 * as a warp's; lines (words after the sequence number; WP_DRES_* below unpack the header):
 *   WP_DRES_HEAD      the words sent (lines) | jobs << 16, the block starts' offset in the image (the table
 *                     is at 0) | the image's bytes << 16, the first byte of the region to answer | its
 *                     length << 20
 *   WP_DRES_IN + i    a byte offset in the image (a multiple of 8), the 8 bytes there (low, high)
 *   WP_RES_OUT + i    the answered region's bytes 12 i .. 12 i + 11 */
#define WP_DATA_RESIDENT 0x52455344 /* "RESD" in wp_data_params.reserved */
#define WP_DRES_HEAD 0
#define WP_DRES_IN 1
#define WP_DRES_IN_LINES (WP_RES_STATUS - WP_DRES_IN)
#define WP_DRES_OUT_LINES (WP_RES_LINES - WP_RES_OUT)
#define WP_DRES_IMAGE_MAX 16384          /* an image's bytes (the block zeroes them all each job): under 1 << 16 */
#define WP_DRES_ANSWER_AT_MAX (1u << 20) /* the region to answer starts below this */
#define WP_DRES_WORD_BYTES 8
/* What the watches read at every look (templates/wp_resident.cuh), which a post flushes out of the host's
 * caches: a data job's header and its first 31 words (a lane each); a warp job's input lines, one a lane
 * (lane 0 the header as well) */
#define WP_DRES_WATCH_LINES 32
#define WP_RES_WATCH_IN 32
/* The header's fields from its words 1..3 (w1, w2, w3). */
#define WP_DRES_WORDS(w1) ((w1)&0xffffu)
#define WP_DRES_JOBS(w1) ((w1) >> 16)
#define WP_DRES_FIRST_AT(w2) ((w2)&0xffffu)
#define WP_DRES_LEN(w2) ((w2) >> 16)
#define WP_DRES_ANSWER_AT(w3) ((w3) & (WP_DRES_ANSWER_AT_MAX - 1))
#define WP_DRES_ANSWER_LEN(w3) ((w3) >> 20)
#define WP_DRES_LINE_BYTES 12

/* ---- data-parallel families (reductions, scans, stencil, generate): kernels/data.h ----------------
 * One parameter block for every such kernel, passed by value as its only argument. Elements are
 * packed in their own type (4 bytes for f32, 2 for f16, ...), not in 8-byte slots. */

/* Strategies: how a block (or warp) combines its threads' values. Template argument STRAT. */
enum {
    WP_STRAT_GMEM = 1,  /* (0 is "auto" in a spec: the family's default) tree through a global-memory scratch array,
                           __syncthreads between levels */
    WP_STRAT_SMEM,      /* tree in shared memory (sequential addressing) */
    WP_STRAT_SHFL_XOR,  /* butterfly __shfl_xor_sync per warp, then over the warps' results */
    WP_STRAT_SHFL_DOWN, /* __shfl_down_sync tree per warp, then over the warps' results */
    WP_STRAT_REDUX,     /* __reduce_*_sync per warp (sm_80+, i32/u32), then over the warps' results */
    WP_STRAT_ATOMIC,    /* each warp's result combined with atomics: the order is not fixed */
    WP_STRAT_SHFL_UP,   /* scans: Kogge-Stone with __shfl_up_sync per warp, then over the warps */
    WP_STRAT_COUNT
};

/* device_reduce, argmin/argmax: the grid is a function of n and the block size alone, whatever the
 * device, so the combining order (and the float bits) are too (kernels/data.c plan_grid_reduce): one
 * block per tile (below) up to WP_REDUCE_GRID_WAVE tiles; beyond, WP_REDUCE_TILES_PER_BLOCK tiles a
 * block, between WP_REDUCE_GRID_WAVE and WP_REDUCE_GRID_MAX blocks. Measured on H100 (bench/RESULTS.md):
 * 1024 blocks is best to 2^26 floats, 4096 (about four waves of resident blocks) from 2^28. */
#define WP_REDUCE_GRID_MAX 4096
#define WP_REDUCE_GRID_WAVE 1024
#define WP_REDUCE_TILES_PER_BLOCK 16
/* ... but the statistics whose kernels hold half the threads an SM (moments: mean, var, std; norm2's
 * sums: templates/stats.cuh) start from this many blocks: measured on H100 (bench/RESULTS.md), 256
 * blocks reach 0.92-1.02x sum's speed at 2^24 f32 where 1024 reached 0.77-0.95x (each block's combine
 * of four doubles is paid by fewer blocks). */
#define WP_STATS_GRID_WAVE 256
/* ... and holds at most ceil(vectors / (BLOCK * this)) blocks: small inputs give each thread four
 * vectors in flight rather than a thousand blocks one vector each (fewer tickets, one wave). */
#define WP_REDUCE_MIN_VECS 4
/* ... and reads tiles of BLOCK * this many 16-byte vectors: block b takes tiles b, b + G, ...; in a
 * tile, thread t the vectors t, t + BLOCK, ... (each thread has this many loads in flight, and each
 * block 16 * BLOCK * this contiguous bytes). Part of the combining order (kernels/reduce.c). */
#define WP_REDUCE_UNROLL 4
/* device_scan: bytes of input each thread scans (8 vectors of 16 bytes): the tile is BLOCK times this.
 * 128 measured faster than 64 on H100 (bench/RESULTS.md): half the tiles, half the look-backs. */
#define WP_SCAN_THREAD_BYTES 128
#define WP_STENCIL_MAX_RADIUS 4
/* warp_reduce / warp_scan at a width W that is not a power of two (logical warps: each warp holds
 * 32 / W whole groups): each thread holds this many elements, rows of the warp's tile, all loaded
 * before the first shuffle so that as many loads are in flight. Not part of any combining order. */
#define WP_LW_ROWS 4
/* reduce_by_key (templates/bykey.cu, kernels/bykey.c): elements each thread folds (a tile is BLOCK
 * times this), and the bytes of a tile's status record: a stamp word, then the aggregate and the
 * inclusive prefix, each a (runs, value bits) pair. Parameters: in the values, aux the keys, out the
 * runs' values, seed the runs' keys (an address), counter where the number of runs goes (u64). */
#define WP_BYKEY_ITEMS 16
#define WP_BYKEY_RECORD 40

/* device_scan tile status: one record per tile from p.scratch, stamped (epoch << 2 | WP_TILE_*). An
 * accumulator of up to 4 bytes: one 8-byte word, the stamp in its high half and the value's bits in
 * the low one. An 8-byte one: 16 bytes, the stamp word, then the value's bits, written and read as one
 * 16-byte access. A record size is a layout: the engine zeroes the status before another layout reads it. */
enum { WP_TILE_NONE = 0, WP_TILE_AGGREGATE = 1, WP_TILE_PREFIX = 2 };
#define WP_TILE_RECORD_PACKED 8
#define WP_TILE_RECORD_WIDE 16

typedef struct wp_data_params {
    unsigned long long in;      /* const T * : n elements */
    unsigned long long in2;     /* const T * : n elements, the second input a map reads as y (0: none) */
    unsigned long long out;     /* results: T or the accumulator type, per family (kernels/data.h) */
    unsigned long long aux;     /* segmented_reduce: const unsigned long long *offsets (groups + 1) */
    unsigned long long scratch; /* per-block partials or tile status (device_*; zeroed once at alloc) */
    unsigned long long counter; /* unsigned * : ticket / tile counter, left at 0 by each launch */
    unsigned long long n;       /* elements */
    unsigned long long groups;  /* output count: segments, warp/block groups, tiles (device_scan) */
    unsigned long long init;    /* raw bits (accumulator type) of the initial value when has_init */
    unsigned long long seed;    /* generate */
    double weights[2 * WP_STENCIL_MAX_RADIUS + 1]; /* stencil, in the accumulator type's precision */
    unsigned epoch;                                /* device_scan: this launch's tile-status epoch (1, 2, ...) */
    int has_init;
    int kind; /* generate: WP_GEN_* */
    int reserved;
} wp_data_params;

enum { WP_GEN_IOTA = 0, WP_GEN_RANDOM, WP_GEN_CONSTANT };

/* device_reduce's statistics and norms (kernels/stats.h, templates/stats.cuh): the accumulator a
 * stats kernel folds (its VARIANT). mean, var and std share the moments; norm1 folds |x| sums,
 * norm2 squares, norminf |x| maxima, count_nonzero a count. Every one fits WP_STAT_ACC_BYTES. */
enum { WP_SACC_MOMENTS = 1, WP_SACC_ABS_SUM, WP_SACC_SQ_SUM, WP_SACC_ABS_MAX, WP_SACC_NONZERO };
#define WP_STAT_ACC_BYTES 32
/* histogram (templates/histogram.cu, kernels/hist.c): numpy's uniform bins. The bins are p.groups,
 * p.aux the bins + 1 edges (doubles), p.out bins unsigned long long counts (zeroed before the launch);
 * p.weights the binning, values of the compare type E (f32 for f32/f16/bf16, f64 for f64 and the
 * integers): the first and last edges, the scale, the mode and the slack D. A value v, first <= v <= last,
 * finds its bin by
 *   WP_HIST_FAST:   x = (v - first) * scale in E (each step rounded once), i = min(floor(x), bins - 1);
 *                   i is the bin when x - i > D and i + 1 - x > D (D bounds |x(edge j) - j| over every
 *                   edge: the host computed it), else i is corrected by one against the edges;
 *   WP_HIST_SEARCH: a binary search of the edges (where D would be 1/4 or more). */
enum { WP_HIST_W_FIRST = 0, WP_HIST_W_LAST = 1, WP_HIST_W_SCALE = 2, WP_HIST_W_MODE = 3, WP_HIST_W_SLACK = 4 };
enum { WP_HIST_FAST = 0, WP_HIST_SEARCH = 1 };
#define WP_HIST_BINS_MAX (1u << 20) /* the most bins a request may ask for */
#define WP_HIST_SMEM_BINS 12288     /* strategy smem: up to this many u32 counts per block (48 KiB) */

#endif
