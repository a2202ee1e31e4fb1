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
    unsigned long long in;     /* const unsigned long long * : n*elems slots */
    unsigned long long out;    /* unsigned long long * : n*elems slots (kernel writes only lanes that ran) */
    unsigned long long src;    /* int * : n; source lane per lane (shuffles), match_all predicate */
    unsigned long long arg;    /* const int * : n; run-time argument per lane (src_lane/delta/lane_mask) */
    unsigned long long active; /* const unsigned char * : n; 0 = lane returned before the primitive */
    unsigned long long pred_a, pred_b; /* raw bits of the predicate constants, in the spec's type */
    int n;                     /* lanes; threads >= n return at once */
    int elems;                 /* 1..WP_MAX_ELEMS */
    int pred_kind;             /* WP_PRED_* */
    int first, second;         /* swap: element indices */
    int reserved;
} wp_warp_params;

#endif
