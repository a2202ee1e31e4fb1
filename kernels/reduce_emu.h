/* reduce_emu.h — the emulator's combining helpers shared by reduce.c and scan.c: an operator over
 * the accumulator type, element loads, and the tree and group orders of templates/wp_block.cuh.
 * Values are raw bits in uint64_t (types.h). Internal to kernels/. */
#ifndef WP_REDUCE_EMU_H
#define WP_REDUCE_EMU_H

#include <stdint.h>

#include "data.h"
#include "expr.h"

typedef struct {
    const wp_op *op;
    wp_type type, acc; /* element and accumulator types */
    int strategy;
    const void *in;   /* packed elements (host) */
    const wp_op *map; /* the spec's map (NULL: none), applied in the element type when an element is read */
    const void *in2;  /* the second input the map reads as y (host), or NULL */
    uint64_t ident;   /* p->init: the identity (reductions) or the init value (scans) */
} wp_remu;

void wp_remu_init(wp_remu *c, const struct wp_spec *s, const wp_data_params *p);
uint64_t wp_remu_apply(const wp_remu *c, uint64_t a, uint64_t b); /* op(a, b) in the accumulator */
uint64_t wp_remu_elem(const wp_remu *c, uint64_t i);              /* element i (mapped) as an accumulator */
/* tree(valid) over v[0..valid): the result (v[0]); clobbers v. */
uint64_t wp_remu_tree(const wp_remu *c, uint64_t *v, int valid);
/* tree_up(valid) over v[0..valid): CUB's order for a logical warp of a width that is not a power of two
 * (docs/semantics.md); clobbers v. */
uint64_t wp_remu_tree_up(const wp_remu *c, uint64_t *v, int valid);
/* wp_group_reduce of templates/wp_block.cuh for a group of `group` threads, the first `valid` holding v. */
uint64_t wp_remu_group_reduce(const wp_remu *c, int strategy, uint64_t *v, int group, int valid);

#endif
