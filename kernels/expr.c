/* expr.c — binary operators: the arithmetic of every operator, the operator table and the builtins,
 * and evaluation on the host (the emulator's arithmetic) of a builtin or a parsed tree. The grammar
 * is expr_parse.c's (DESIGN.md §3); the canonical text and the C++ functor are expr_text.c's.
 * Owns: wp_expr's memory once parsed (wp_op_free, wp_op_copy). The arithmetic rules live here, in
 * templates/wp_ops.cuh and in expr.h: keep the three in step (tests/unit/ops_gpu_check.sh compares host
 * and GPU bit for bit). */
#include "expr_impl.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if FLT_EVAL_METHOD != 0
#error "f32 must be evaluated in float, never wider, to match the GPU bit for bit"
#endif

#define CANON_NAN_F32 0x7fffffffu /* what the GPU's f32 arithmetic returns for any NaN */
#define CANON_NAN_F64 0x7fffffffffffffffull

/* ---- integer arithmetic: raw bits masked to the type, wrap-around, no UB ---- */

static uint64_t imask(wp_type t) { return wp_type_bitmask(t); }
static unsigned ibits(wp_type t) { return (unsigned)wp_type_size(t) * 8; }
static int64_t isext(wp_type t, uint64_t x) { return t == WP_I32 ? (int32_t)(uint32_t)x : (int64_t)x; }
static bool isigned(wp_type t) { return wp_type_is_signed(t); }
static bool ilt(wp_type t, uint64_t x, uint64_t y) { return isigned(t) ? isext(t, x) < isext(t, y) : x < y; }

static uint64_t i_add(wp_type t, uint64_t x, uint64_t y) { return (x + y) & imask(t); }
static uint64_t i_sub(wp_type t, uint64_t x, uint64_t y) { return (x - y) & imask(t); }
static uint64_t i_mul(wp_type t, uint64_t x, uint64_t y) { return (x * y) & imask(t); }
static uint64_t i_neg(wp_type t, uint64_t x, uint64_t y) { return (void)y, (0 - x) & imask(t); }
static uint64_t i_not(wp_type t, uint64_t x, uint64_t y) { return (void)y, ~x & imask(t); }
static uint64_t i_and(wp_type t, uint64_t x, uint64_t y) { return (void)t, x & y; }
static uint64_t i_or(wp_type t, uint64_t x, uint64_t y) { return (void)t, x | y; }
static uint64_t i_xor(wp_type t, uint64_t x, uint64_t y) { return (void)t, x ^ y; }

static uint64_t i_div(wp_type t, uint64_t x, uint64_t y) {
    if (!isigned(t)) return y ? x / y : 0;
    int64_t sx = isext(t, x), sy = isext(t, y);
    if (sy == 0) return 0;
    if (sy == -1) return i_neg(t, x, 0); /* INT_MIN / -1 wraps to INT_MIN */
    return (uint64_t)(sx / sy) & imask(t);
}

static uint64_t i_mod(wp_type t, uint64_t x, uint64_t y) {
    if (!isigned(t)) return y ? x % y : 0;
    int64_t sx = isext(t, x), sy = isext(t, y);
    if (sy == 0 || sy == -1) return 0;
    return (uint64_t)(sx % sy) & imask(t);
}

static uint64_t i_shl(wp_type t, uint64_t x, uint64_t y) { return (x << (y & (ibits(t) - 1))) & imask(t); }

static uint64_t i_shr(wp_type t, uint64_t x, uint64_t y) {
    unsigned n = (unsigned)(y & (ibits(t) - 1));
    if (!isigned(t)) return x >> n;
    int64_t sx = isext(t, x);
    int64_t r = sx >= 0 ? sx >> n : ~(~sx >> n); /* arithmetic shift without implementation-defined >> */
    return (uint64_t)r & imask(t);
}

static uint64_t i_lt(wp_type t, uint64_t x, uint64_t y) { return ilt(t, x, y); }
static uint64_t i_le(wp_type t, uint64_t x, uint64_t y) { return !ilt(t, y, x); }
static uint64_t i_gt(wp_type t, uint64_t x, uint64_t y) { return ilt(t, y, x); }
static uint64_t i_ge(wp_type t, uint64_t x, uint64_t y) { return !ilt(t, x, y); }
static uint64_t i_eq(wp_type t, uint64_t x, uint64_t y) { return (void)t, x == y; }
static uint64_t i_ne(wp_type t, uint64_t x, uint64_t y) { return (void)t, x != y; }
static uint64_t i_min(wp_type t, uint64_t x, uint64_t y) { return ilt(t, y, x) ? y : x; }
static uint64_t i_max(wp_type t, uint64_t x, uint64_t y) { return ilt(t, x, y) ? y : x; }
static uint64_t i_abs(wp_type t, uint64_t x, uint64_t y) {
    (void)y;
    return isigned(t) && isext(t, x) < 0 ? i_neg(t, x, 0) : x;
}

/* ---- f32: evaluated in float (never widened between operations); NaN results made canonical ---- */

static float f32_canon(float r) { return isnan(r) ? wp_bits_f32(CANON_NAN_F32) : r; }
static float f_add(float x, float y) { return f32_canon(x + y); }
static float f_sub(float x, float y) { return f32_canon(x - y); }
static float f_mul(float x, float y) { return f32_canon(x * y); }
static float f_div(float x, float y) { return f32_canon(x / y); }
static float f_neg(float x, float y) { return (void)y, wp_bits_f32(wp_f32_bits(x) ^ 0x80000000u); }
static float f_abs(float x, float y) { return (void)y, wp_bits_f32(wp_f32_bits(x) & 0x7fffffffu); }
static float f_lt(float x, float y) { return x < y ? 1.0f : 0.0f; }
static float f_le(float x, float y) { return x <= y ? 1.0f : 0.0f; }
static float f_gt(float x, float y) { return x > y ? 1.0f : 0.0f; }
static float f_ge(float x, float y) { return x >= y ? 1.0f : 0.0f; }
static float f_eq(float x, float y) { return x == y ? 1.0f : 0.0f; }
static float f_ne(float x, float y) { return x != y ? 1.0f : 0.0f; }
static float f_min(float x, float y) { return isnan(x) ? y : isnan(y) ? x : (y < x ? y : x); }
static float f_max(float x, float y) { return isnan(x) ? y : isnan(y) ? x : (x < y ? y : x); }

/* ---- f64: the same rules in double ---- */

static double d_canon(double r) { return isnan(r) ? wp_bits_f64(CANON_NAN_F64) : r; }
static double d_add(double x, double y) { return d_canon(x + y); }
static double d_sub(double x, double y) { return d_canon(x - y); }
static double d_mul(double x, double y) { return d_canon(x * y); }
static double d_div(double x, double y) { return d_canon(x / y); }
static double d_neg(double x, double y) { return (void)y, wp_bits_f64(wp_f64_bits(x) ^ 0x8000000000000000ull); }
static double d_abs(double x, double y) { return (void)y, wp_bits_f64(wp_f64_bits(x) & 0x7fffffffffffffffull); }
static double d_lt(double x, double y) { return x < y ? 1.0 : 0.0; }
static double d_le(double x, double y) { return x <= y ? 1.0 : 0.0; }
static double d_gt(double x, double y) { return x > y ? 1.0 : 0.0; }
static double d_ge(double x, double y) { return x >= y ? 1.0 : 0.0; }
static double d_eq(double x, double y) { return x == y ? 1.0 : 0.0; }
static double d_ne(double x, double y) { return x != y ? 1.0 : 0.0; }
static double d_min(double x, double y) { return isnan(x) ? y : isnan(y) ? x : (y < x ? y : x); }
static double d_max(double x, double y) { return isnan(x) ? y : isnan(y) ? x : (x < y ? y : x); }

const op_row expr_op_rows[N_KIND_COUNT] = {
    [N_NEG] = {"-", "wp_neg", 1, 0, false, i_neg, f_neg, d_neg},
    [N_NOT] = {"~", "wp_not", 1, 0, true, i_not, NULL, NULL},
    [N_ABS] = {"abs", "wp_abs", 1, 0, false, i_abs, f_abs, d_abs},
    [N_MUL] = {"*", "wp_mul", 2, 10, false, i_mul, f_mul, d_mul},
    [N_DIV] = {"/", "wp_div", 2, 10, false, i_div, f_div, d_div},
    [N_MOD] = {"%", "wp_mod", 2, 10, true, i_mod, NULL, NULL},
    [N_ADD] = {"+", "wp_add", 2, 9, false, i_add, f_add, d_add},
    [N_SUB] = {"-", "wp_sub", 2, 9, false, i_sub, f_sub, d_sub},
    [N_SHL] = {"<<", "wp_shl", 2, 8, true, i_shl, NULL, NULL},
    [N_SHR] = {">>", "wp_shr", 2, 8, true, i_shr, NULL, NULL},
    [N_LT] = {"<", "wp_lt", 2, 7, false, i_lt, f_lt, d_lt},
    [N_LE] = {"<=", "wp_le", 2, 7, false, i_le, f_le, d_le},
    [N_GT] = {">", "wp_gt", 2, 7, false, i_gt, f_gt, d_gt},
    [N_GE] = {">=", "wp_ge", 2, 7, false, i_ge, f_ge, d_ge},
    [N_EQ] = {"==", "wp_eq", 2, 6, false, i_eq, f_eq, d_eq},
    [N_NE] = {"!=", "wp_ne", 2, 6, false, i_ne, f_ne, d_ne},
    [N_AND] = {"&", "wp_and", 2, 5, true, i_and, NULL, NULL},
    [N_XOR] = {"^", "wp_xor", 2, 4, true, i_xor, NULL, NULL},
    [N_OR] = {"|", "wp_or", 2, 3, true, i_or, NULL, NULL},
    [N_MIN] = {"min", "wp_min", 2, 0, false, i_min, f_min, d_min},
    [N_MAX] = {"max", "wp_max", 2, 0, false, i_max, f_max, d_max},
    [N_SEL] = {"?:", "wp_sel", 3, 0, false, NULL, NULL, NULL},
};

const builtin_row expr_builtin_rows[WP_OP_EXPR] = {
    [WP_OP_SUM] = {"sum", N_ADD, "wp_op_sum"}, [WP_OP_PROD] = {"prod", N_MUL, "wp_op_prod"},
    [WP_OP_MIN] = {"min", N_MIN, "wp_op_min"}, [WP_OP_MAX] = {"max", N_MAX, "wp_op_max"},
    [WP_OP_AND] = {"and", N_AND, "wp_op_and"}, [WP_OP_OR] = {"or", N_OR, "wp_op_or"},
    [WP_OP_XOR] = {"xor", N_XOR, "wp_op_xor"},
};

/* ---- host evaluation ---- */

static uint64_t eval_int(const wp_expr *e, int id, wp_type t, uint64_t a, uint64_t b) {
    const node *nd = &e->nodes[id];
    switch (nd->kind) {
    case N_A:
        return a;
    case N_B:
        return b;
    case N_INT:
        return nd->ival & imask(t);
    case N_FLT:
        return 0; /* rejected at parse time for integer types */
    case N_SEL:
        return eval_int(e, nd->kid[0], t, a, b) ? eval_int(e, nd->kid[1], t, a, b) : eval_int(e, nd->kid[2], t, a, b);
    default:
        break;
    }
    const op_row *row = &expr_op_rows[nd->kind];
    uint64_t x = eval_int(e, nd->kid[0], t, a, b);
    uint64_t y = row->arity == 2 ? eval_int(e, nd->kid[1], t, a, b) : 0;
    return row->fi(t, x, y);
}

static float eval_f32(const wp_expr *e, int id, float a, float b) {
    const node *nd = &e->nodes[id];
    switch (nd->kind) {
    case N_A:
        return a;
    case N_B:
        return b;
    case N_INT:
        return (float)nd->ival;
    case N_FLT:
        return (float)nd->fval;
    case N_SEL:
        return eval_f32(e, nd->kid[0], a, b) != 0.0f ? eval_f32(e, nd->kid[1], a, b) : eval_f32(e, nd->kid[2], a, b);
    default:
        break;
    }
    const op_row *row = &expr_op_rows[nd->kind];
    float x = eval_f32(e, nd->kid[0], a, b);
    float y = row->arity == 2 ? eval_f32(e, nd->kid[1], a, b) : 0.0f;
    return row->ff ? row->ff(x, y) : 0.0f;
}

static double eval_f64(const wp_expr *e, int id, double a, double b) {
    const node *nd = &e->nodes[id];
    switch (nd->kind) {
    case N_A:
        return a;
    case N_B:
        return b;
    case N_INT:
        return (double)nd->ival;
    case N_FLT:
        return nd->fval;
    case N_SEL:
        return eval_f64(e, nd->kid[0], a, b) != 0.0 ? eval_f64(e, nd->kid[1], a, b) : eval_f64(e, nd->kid[2], a, b);
    default:
        break;
    }
    const op_row *row = &expr_op_rows[nd->kind];
    double x = eval_f64(e, nd->kid[0], a, b);
    double y = row->arity == 2 ? eval_f64(e, nd->kid[1], a, b) : 0.0;
    return row->fd ? row->fd(x, y) : 0.0;
}

/* One evaluation in f32 (f32, f16, bf16): either the tree or one builtin row. */
static float apply_f32(const wp_op *op, float x, float y) {
    if (op->kind == WP_OP_EXPR) return eval_f32(op->expr, op->expr->root, x, y);
    const op_row *row = &expr_op_rows[expr_builtin_rows[op->kind].kind];
    return row->ff ? row->ff(x, y) : 0.0f;
}

static double apply_f64(const wp_op *op, double x, double y) {
    if (op->kind == WP_OP_EXPR) return eval_f64(op->expr, op->expr->root, x, y);
    const op_row *row = &expr_op_rows[expr_builtin_rows[op->kind].kind];
    return row->fd ? row->fd(x, y) : 0.0;
}

static uint64_t apply_int(const wp_op *op, wp_type t, uint64_t x, uint64_t y) {
    if (op->kind == WP_OP_EXPR) return eval_int(op->expr, op->expr->root, t, x, y);
    return expr_op_rows[expr_builtin_rows[op->kind].kind].fi(t, x, y);
}

uint64_t wp_op_apply(const wp_op *op, wp_type t, uint64_t a, uint64_t b) {
    if ((unsigned)op->kind >= WP_OP_COUNT || (op->kind == WP_OP_EXPR && !op->expr)) return 0;
    a &= wp_type_bitmask(t);
    b &= wp_type_bitmask(t);
    switch (t) {
    case WP_F32:
        return wp_f32_bits(apply_f32(op, wp_bits_f32(a), wp_bits_f32(b)));
    case WP_F64:
        return wp_f64_bits(apply_f64(op, wp_bits_f64(a), wp_bits_f64(b)));
    case WP_F16:
        return wp_f32_to_f16(apply_f32(op, wp_f16_to_f32((uint16_t)a), wp_f16_to_f32((uint16_t)b)));
    case WP_BF16:
        return wp_f32_to_bf16(apply_f32(op, wp_bf16_to_f32((uint16_t)a), wp_bf16_to_f32((uint16_t)b)));
    default:
        return wp_type_is_int(t) ? apply_int(op, t, a, b) : 0;
    }
}

/* ---- the public face ---- */

void wp_op_free(wp_op *op) {
    if (!op) return;
    free(op->expr);
    op->expr = NULL;
}

int wp_op_copy(wp_op *dst, const wp_op *src) {
    *dst = *src;
    if (!src->expr) return 0;
    size_t bytes = sizeof *src->expr + (size_t)src->expr->cap * sizeof(node);
    dst->expr = malloc(bytes);
    if (!dst->expr) return -1;
    memcpy(dst->expr, src->expr, bytes);
    return 0;
}

bool wp_op_identity(const wp_op *op, wp_type t, uint64_t *out) {
    if ((unsigned)op->kind >= WP_OP_EXPR || (unsigned)t >= WP_TYPE_COUNT) return false;
    bool is_float = wp_type_is_float(t);
    if (is_float && expr_op_rows[expr_builtin_rows[op->kind].kind].int_only) return false;
    uint64_t m = wp_type_bitmask(t);
    uint64_t int_max = wp_type_is_signed(t) ? m >> 1 : m; /* largest value of an integer type */
    switch (op->kind) {
    case WP_OP_SUM:
        *out = is_float ? wp_value_from_double(t, 0.0) : 0;
        break;
    case WP_OP_PROD:
        *out = is_float ? wp_value_from_double(t, 1.0) : 1;
        break;
    case WP_OP_MIN:
        *out = is_float ? wp_value_from_double(t, INFINITY) : int_max;
        break;
    case WP_OP_MAX:
        *out = is_float ? wp_value_from_double(t, -INFINITY) : (int_max + 1) & m;
        break;
    case WP_OP_AND:
        *out = m;
        break;
    default:
        *out = 0;
        break; /* or, xor */
    }
    return true;
}
