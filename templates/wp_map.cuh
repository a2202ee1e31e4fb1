/* wp_map.cuh — transform-reduce: a map applied to each element where a data kernel reads it, before
 * the operator (kernels/expr.h, "maps"). kernels/spec.c passes a kernel with a map the Op
 * wp_mapped<op, wp_map_expr>: the kernel splits it (wp_split) into the operator it combines with and
 * the map it reads through; a plain Op has the map wp_map_none. wp_map_expr (emitted from the parsed
 * expression, never client text) computes in the element type T like an operator (wp_ops.cuh), and
 * reads y, element i of p.in2, only when uses_y. kernels/reduce.c (wp_remu_elem) does the same. */
#ifndef WP_MAP_CUH
#define WP_MAP_CUH

#include "wp_block.cuh"

struct wp_map_none {
    static constexpr bool uses_y = false;
    template <typename T> WP_DEV T operator()(T x, T) const { return x; }
};

template <class O, class M> struct wp_mapped {}; /* only a name: wp_split takes it apart */
template <class Op> struct wp_split {
    typedef Op op;
    typedef wp_map_none map;
};
template <class O, class M> struct wp_split<wp_mapped<O, M>> {
    typedef O op;
    typedef M map;
};

template <class Map> struct wp_is_map { static constexpr bool value = true; };
template <> struct wp_is_map<wp_map_none> { static constexpr bool value = false; };

/* Element i of `in`, mapped (y from p.in2 when the map reads it). */
template <class Map, typename T> WP_DEV T wp_map_at(const wp_data_params &p, const T *in, unsigned long long i) {
    if constexpr (Map::uses_y)
        return Map()(in[i], ((const T *)p.in2)[i]);
    else
        return Map()(in[i], in[i]);
}

/* Map(x[j], y[j]) of a thread's loaded elements; y is not read unless the map reads it. */
template <class Map, typename T, int K> WP_DEV T wp_map_pick(const T (&x)[K], const T (&y)[K], int j) {
    if constexpr (Map::uses_y)
        return Map()(x[j], y[j]);
    else
        return Map()(x[j], x[j]);
}

/* Threads per block for min-blocks launch bounds: a map over two inputs keeps twice the loads in
 * flight per thread, so it asks for half the resident blocks (64 registers rather than 32). */
template <class Op> struct wp_map_inputs { static constexpr int value = wp_split<Op>::map::uses_y ? 2 : 1; };

#endif
