/* expr_impl.h — an operator's parse tree and the operator table as the expr*.c files see them (expr.c: the
 * arithmetic, the tables, host evaluation; expr_parse.c: the grammar; expr_text.c: canonical text and
 * C++). Internal to kernels/: nothing else includes it. */
#ifndef WP_EXPR_IMPL_H
#define WP_EXPR_IMPL_H

#include "expr.h"

/* ---- node kinds and the operator table ---- */

/* Leaves (a, b, literals), unary operators, infix operators, calls, and c ? x : y. */
/* clang-format off */
typedef enum {
    N_A, N_B, N_INT, N_FLT,
    N_NEG, N_NOT, N_ABS,
    N_MUL, N_DIV, N_MOD, N_ADD, N_SUB, N_SHL, N_SHR, N_LT, N_LE, N_GT, N_GE, N_EQ, N_NE, N_AND, N_XOR, N_OR,
    N_MIN, N_MAX,
    N_SEL,
    N_KIND_COUNT
} node_kind;
/* clang-format on */

typedef struct {
    node_kind kind;
    int kid[3];
    int pos;    /* 0-based offset in the client text, for errors */
    int height; /* 1 for a leaf */
    uint64_t ival;
    double fval;
} node;

struct wp_expr {
    int root, count, cap;
    bool map; /* a map (wp_map_parse): the leaves N_A and N_B are spelled x and y */
    node nodes[];
};

typedef uint64_t (*int_fn)(wp_type t, uint64_t x, uint64_t y);
typedef float (*f32_fn)(float x, float y);
typedef double (*f64_fn)(double x, double y);

typedef struct {
    const char *tok;    /* canonical spelling ("+", "min", ...) */
    const char *helper; /* device helper in wp_ops.cuh */
    int arity;
    int prec;      /* binary infix precedence, higher binds tighter; 0 = not infix */
    bool int_only; /* not allowed on float types */
    int_fn fi;
    f32_fn ff;
    f64_fn fd;
} op_row;

/* The builtins are table rows too: a name, the node kind that computes it, its C++ functor. */
typedef struct {
    const char *name;
    node_kind kind;
    const char *functor;
} builtin_row;

/* expr.c: one row per node kind, one per builtin */
extern const op_row expr_op_rows[N_KIND_COUNT];
extern const builtin_row expr_builtin_rows[WP_OP_EXPR];

/* expr_text.c: a bounded text buffer (overflow: the text did not fit), the canonical text of e's
 * subtree at id */
typedef struct {
    char *buf;
    size_t cap, len;
    bool overflow;
} sbuf;

void expr_print_canon(sbuf *b, const wp_expr *e, int id);

#endif
