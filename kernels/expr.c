/* expr.c — binary operators: the builtin list and the expression grammar over `a` and `b`
 * (DESIGN.md §3). Parses client text into a flat node array, evaluates it on the host (the
 * emulator's arithmetic) and re-emits it as a C++ functor built only from the helpers of
 * templates/wp_ops.cuh, so client text never reaches NVRTC.
 * Owns: wp_expr. The arithmetic rules live here, in templates/wp_ops.cuh and in expr.h: keep the
 * three in step (tests/unit/ops_gpu_check.sh compares host and GPU bit for bit). */
#include "expr.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if FLT_EVAL_METHOD != 0
#error "f32 must be evaluated in float, never wider, to match the GPU bit for bit"
#endif

/* The limit a client meets is the height of the tree (so evaluation and the emitted C++ stay shallow).
 * Syntactic nesting (parentheses, unary operators, calls, ?:) is capped only to bound the parser's
 * recursion, loosely enough that the canonical text of any accepted tree (at most two levels per
 * tree level) parses again. */
#define EXPR_MAX_HEIGHT 32
#define EXPR_MAX_NEST (2 * EXPR_MAX_HEIGHT + 2)

#define EXPR_TOKEN_ECHO 24 /* at most this much client text is quoted back in an error */

#define CANON_NAN_F32 0x7fffffffu /* what the GPU's f32 arithmetic returns for any NaN */
#define CANON_NAN_F64 0x7fffffffffffffffull

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

static const op_row op_rows[N_KIND_COUNT] = {
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

/* The builtins are table rows too: a name, the node kind that computes it, its C++ functor. */
typedef struct {
    const char *name;
    node_kind kind;
    const char *functor;
} builtin_row;

static const builtin_row builtin_rows[WP_OP_EXPR] = {
    [WP_OP_SUM] = {"sum", N_ADD, "wp_op_sum"}, [WP_OP_PROD] = {"prod", N_MUL, "wp_op_prod"},
    [WP_OP_MIN] = {"min", N_MIN, "wp_op_min"}, [WP_OP_MAX] = {"max", N_MAX, "wp_op_max"},
    [WP_OP_AND] = {"and", N_AND, "wp_op_and"}, [WP_OP_OR] = {"or", N_OR, "wp_op_or"},
    [WP_OP_XOR] = {"xor", N_XOR, "wp_op_xor"},
};

/* ---- tokens ---- */

typedef enum { T_END, T_INT, T_FLT, T_A, T_B, T_CALL, T_OP, T_LPAREN, T_RPAREN, T_COMMA, T_QUEST, T_COLON } tok_kind;

typedef struct {
    tok_kind kind;
    int pos, len;
    node_kind op; /* T_OP: the binary reading (N_SUB for '-'); T_CALL: N_MIN, N_MAX, N_ABS */
    uint64_t ival;
    double fval;
} token;

static const struct {
    const char *text;
    tok_kind kind;
    node_kind op;
} punct_rows[] = {
    /* two-character spellings first: the longest match wins */
    {"<<", T_OP, N_SHL}, {">>", T_OP, N_SHR}, {"<=", T_OP, N_LE}, {">=", T_OP, N_GE}, {"==", T_OP, N_EQ},
    {"!=", T_OP, N_NE},  {"+", T_OP, N_ADD},  {"-", T_OP, N_SUB}, {"*", T_OP, N_MUL}, {"/", T_OP, N_DIV},
    {"%", T_OP, N_MOD},  {"&", T_OP, N_AND},  {"|", T_OP, N_OR},  {"^", T_OP, N_XOR}, {"~", T_OP, N_NOT},
    {"<", T_OP, N_LT},   {">", T_OP, N_GT},   {"(", T_LPAREN, 0}, {")", T_RPAREN, 0}, {",", T_COMMA, 0},
    {"?", T_QUEST, 0},   {":", T_COLON, 0},
};

static const struct {
    const char *name;
    tok_kind kind;
    node_kind op;
} name_rows[] = {
    {"a", T_A, N_A}, {"b", T_B, N_B}, {"min", T_CALL, N_MIN}, {"max", T_CALL, N_MAX}, {"abs", T_CALL, N_ABS},
};

typedef struct {
    const char *s;
    int len;
    wp_type type;
    const char *field;
    wp_err *err;
    token cur;
    int nest;
    wp_expr *e;
} parser;

/* Quotes a piece of client text for a message: printable ASCII as is (truncated), else one byte in hex. */
static void describe(const char *s, int len, char *out, size_t n) {
    unsigned char c = (unsigned char)s[0];
    if (len <= 0 || c == 0) {
        snprintf(out, n, "end of input");
        return;
    }
    if (!isprint(c)) {
        snprintf(out, n, "byte 0x%02x", c);
        return;
    }
    int shown = len > EXPR_TOKEN_ECHO ? EXPR_TOKEN_ECHO : len;
    for (int i = 0; i < shown; i++)
        if (!isprint((unsigned char)s[i])) shown = i;
    snprintf(out, n, "'%.*s%s'", shown, s, shown < len ? "..." : "");
}

static int fail_at(parser *p, int pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(parser *p, int pos, const char *fmt, ...) {
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return WP_FAIL(p->err, 400, "bad_op", p->field, "%s at position %d", what, pos);
}

static int fail_token(parser *p, const token *tk, const char *expected) {
    char what[64];
    describe(p->s + tk->pos, tk->kind == T_END ? 0 : tk->len, what, sizeof what);
    return fail_at(p, tk->pos, "expected %s, found %s", expected, what);
}

static bool is_name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Decimal or hex integer digits into *v; false on overflow of 64 bits. */
static bool scan_uint(const char *s, int n, int base, uint64_t *v) {
    uint64_t acc = 0;
    for (int i = 0; i < n; i++) {
        int d = isdigit((unsigned char)s[i]) ? s[i] - '0' : tolower((unsigned char)s[i]) - 'a' + 10;
        if (acc > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return false;
        acc = acc * (uint64_t)base + (uint64_t)d;
    }
    *v = acc;
    return true;
}

static int span_while(const char *s, int (*pred)(int)) {
    int n = 0;
    while (s[n] && pred((unsigned char)s[n])) n++;
    return n;
}

static int lex_number(parser *p, int pos, token *tk) {
    const char *s = p->s + pos;
    int n;
    bool is_float = false;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        n = 2 + span_while(s + 2, isxdigit);
        if (n == 2) return fail_at(p, pos, "hex literal without digits");
    } else {
        n = span_while(s, isdigit);
        if (s[n] == '.') {
            is_float = true;
            n += 1 + span_while(s + n + 1, isdigit);
        }
        if (s[n] == 'e' || s[n] == 'E') {
            int m = n + 1 + (s[n + 1] == '+' || s[n + 1] == '-');
            int digits = span_while(s + m, isdigit);
            if (!digits) return fail_at(p, pos + n, "exponent without digits");
            is_float = true;
            n = m + digits;
        }
    }
    if (is_name_char(s[n]) || s[n] == '.') {
        char what[64];
        describe(s + n, 1, what, sizeof what);
        return fail_at(p, pos + n, "unexpected %s after a number", what);
    }
    tk->kind = is_float ? T_FLT : T_INT;
    tk->len = n;
    if (is_float) {
        char buf[WP_EXPR_MAX_LEN + 1];
        memcpy(buf, s, (size_t)n);
        buf[n] = 0;
        tk->fval = strtod(buf, NULL); /* the span is plain decimal: no hex floats, inf or nan reach here */
        if (isinf(tk->fval)) return fail_at(p, pos, "float literal out of range");
        return 0;
    }
    bool hex = n > 1 && (s[1] == 'x' || s[1] == 'X');
    if (!scan_uint(s + (hex ? 2 : 0), n - (hex ? 2 : 0), hex ? 16 : 10, &tk->ival))
        return fail_at(p, pos, "integer literal out of range");
    return 0;
}

static int lex_name(parser *p, int pos, token *tk) {
    const char *s = p->s + pos;
    int n = 0;
    while (is_name_char(s[n])) n++;
    tk->len = n;
    for (size_t i = 0; i < WP_ARRAY_LEN(name_rows); i++) {
        if ((int)strlen(name_rows[i].name) == n && memcmp(name_rows[i].name, s, (size_t)n) == 0) {
            tk->kind = name_rows[i].kind;
            tk->op = name_rows[i].op;
            return 0;
        }
    }
    char what[64];
    describe(s, n, what, sizeof what);
    return fail_at(p, pos, "unknown name %s (only a, b, min, max, abs)", what);
}

static int lex_punct(parser *p, int pos, token *tk) {
    const char *s = p->s + pos;
    for (size_t i = 0; i < WP_ARRAY_LEN(punct_rows); i++) {
        size_t n = strlen(punct_rows[i].text);
        if (strncmp(s, punct_rows[i].text, n) == 0) {
            tk->kind = punct_rows[i].kind;
            tk->op = punct_rows[i].op;
            tk->len = (int)n;
            return 0;
        }
    }
    char what[64];
    describe(s, 1, what, sizeof what);
    return fail_at(p, pos, "unexpected character %s", what);
}

/* Reads the next token into p->cur. */
static int advance(parser *p) {
    int pos = p->cur.pos + p->cur.len;
    while (pos < p->len && (p->s[pos] == ' ' || p->s[pos] == '\t' || p->s[pos] == '\n' || p->s[pos] == '\r')) pos++;
    token tk = {.kind = T_END, .pos = pos};
    p->cur = tk;
    if (pos >= p->len) return 0;
    char c = p->s[pos];
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p->s[pos + 1])))
        return lex_number(p, pos, &p->cur);
    if (isalpha((unsigned char)c) || c == '_') return lex_name(p, pos, &p->cur);
    return lex_punct(p, pos, &p->cur);
}

static int expect(parser *p, tok_kind kind, const char *what) {
    if (p->cur.kind != kind) return fail_token(p, &p->cur, what);
    return advance(p);
}

/* ---- tree building ---- */

/* Bitwise operators, shifts and % exist only for integer types; said at the operator's position. */
static int check_type(parser *p, node_kind kind, int pos) {
    const op_row *row = &op_rows[kind];
    if (row->int_only && wp_type_is_float(p->type))
        return fail_at(p, pos, "operator '%s' is not allowed for float type %s", row->tok, wp_type_name(p->type));
    return 0;
}

static int new_node(parser *p, node_kind kind, int pos, int k0, int k1, int k2) {
    if (check_type(p, kind, pos) < 0) return -1;
    int height = 0;
    int kids[3] = {k0, k1, k2};
    for (int i = 0; i < 3; i++)
        if (kids[i] >= 0 && p->e->nodes[kids[i]].height > height) height = p->e->nodes[kids[i]].height;
    if (height + 1 > EXPR_MAX_HEIGHT)
        return fail_at(p, pos, "expression deeper than %d levels of operations", EXPR_MAX_HEIGHT);
    if (p->e->count >= p->e->cap) return fail_at(p, pos, "expression has too many terms");
    node *nd = &p->e->nodes[p->e->count];
    *nd = (node){.kind = kind, .kid = {k0, k1, k2}, .pos = pos, .height = height + 1};
    return p->e->count++;
}

static int enter(parser *p) {
    if (++p->nest > EXPR_MAX_NEST)
        return fail_at(p, p->cur.pos, "parentheses nested deeper than %d levels", EXPR_MAX_NEST);
    return 0;
}

static int parse_cond(parser *p);

static int parse_leaf(parser *p) {
    token tk = p->cur;
    int id;
    if (tk.kind == T_INT) {
        if (wp_type_is_int(p->type) && tk.ival > wp_type_bitmask(p->type))
            return fail_at(p, tk.pos, "integer literal does not fit type %s", wp_type_name(p->type));
        if ((id = new_node(p, N_INT, tk.pos, -1, -1, -1)) < 0) return -1;
        p->e->nodes[id].ival = tk.ival;
    } else if (tk.kind == T_FLT) {
        if (wp_type_is_int(p->type))
            return fail_at(p, tk.pos, "float literal is not allowed for integer type %s", wp_type_name(p->type));
        if ((id = new_node(p, N_FLT, tk.pos, -1, -1, -1)) < 0) return -1;
        p->e->nodes[id].fval = tk.fval;
    } else {
        if ((id = new_node(p, tk.kind == T_A ? N_A : N_B, tk.pos, -1, -1, -1)) < 0) return -1;
    }
    return advance(p) < 0 ? -1 : id;
}

/* min(x, y), max(x, y), abs(x) */
static int parse_call(parser *p) {
    token fn = p->cur;
    int args[2] = {-1, -1}, arity = op_rows[fn.op].arity;
    if (advance(p) < 0 || expect(p, T_LPAREN, "'('") < 0) return -1;
    for (int i = 0; i < arity; i++) {
        if (i > 0 && expect(p, T_COMMA, "','") < 0) return -1;
        if ((args[i] = parse_cond(p)) < 0) return -1;
    }
    if (expect(p, T_RPAREN, "')'") < 0) return -1;
    return new_node(p, fn.op, fn.pos, args[0], args[1], -1);
}

static int parse_unary(parser *p);

static int parse_primary(parser *p) {
    switch (p->cur.kind) {
    case T_INT:
    case T_FLT:
    case T_A:
    case T_B:
        return parse_leaf(p);
    case T_CALL:
        return parse_call(p);
    case T_LPAREN: {
        if (advance(p) < 0) return -1;
        int id = parse_cond(p);
        if (id < 0 || expect(p, T_RPAREN, "')'") < 0) return -1;
        return id;
    }
    default:
        return fail_token(p, &p->cur, "a, b, a number, '(' or a function");
    }
}

static int parse_unary(parser *p) {
    token tk = p->cur;
    if (tk.kind != T_OP || (tk.op != N_SUB && tk.op != N_ADD && tk.op != N_NOT)) return parse_primary(p);
    if (tk.op == N_NOT && check_type(p, N_NOT, tk.pos) < 0) return -1;
    if (enter(p) < 0 || advance(p) < 0) return -1;
    int id = parse_unary(p);
    p->nest--;
    if (id < 0 || tk.op == N_ADD) return id; /* unary plus changes nothing */
    return new_node(p, tk.op == N_SUB ? N_NEG : N_NOT, tk.pos, id, -1, -1);
}

/* Precedence climbing over the infix rows; all binary operators are left-associative. */
static int parse_binary(parser *p, int min_prec) {
    int lhs = parse_unary(p);
    while (lhs >= 0 && p->cur.kind == T_OP && op_rows[p->cur.op].prec >= min_prec && op_rows[p->cur.op].arity == 2) {
        token op = p->cur;
        if (check_type(p, op.op, op.pos) < 0 || advance(p) < 0) return -1;
        int rhs = parse_binary(p, op_rows[op.op].prec + 1);
        if (rhs < 0) return -1;
        lhs = new_node(p, op.op, op.pos, lhs, rhs, -1);
    }
    return lhs;
}

/* c ? x : y, right-associative, lowest precedence. Entered for every sub-expression, so it also
 * bounds the recursion of parentheses and calls. */
static int parse_cond(parser *p) {
    if (enter(p) < 0) return -1;
    int c = parse_binary(p, 1);
    if (c >= 0 && p->cur.kind == T_QUEST) {
        token q = p->cur;
        int x, y;
        if (advance(p) < 0 || (x = parse_cond(p)) < 0 || expect(p, T_COLON, "':'") < 0 || (y = parse_cond(p)) < 0)
            return -1;
        c = new_node(p, N_SEL, q.pos, c, x, y);
    }
    p->nest--;
    return c;
}

/* ---- text: canonical form and C++ ---- */

typedef struct {
    char *buf;
    size_t cap, len;
    bool overflow;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
    if (b->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->overflow = true;
        return;
    }
    b->len += (size_t)n;
}

/* Shortest decimal that reads back as the same double, always marked as a float literal. */
static void print_float_canon(sbuf *b, double v) {
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    sb_printf(b, "%s%s", tmp, strpbrk(tmp, ".e") ? "" : ".0");
}

static void print_canon(sbuf *b, const wp_expr *e, int id) {
    const node *nd = &e->nodes[id];
    const op_row *row = &op_rows[nd->kind];
    switch (nd->kind) {
    case N_A:
        sb_printf(b, "a");
        return;
    case N_B:
        sb_printf(b, "b");
        return;
    case N_INT:
        sb_printf(b, "%llu", (unsigned long long)nd->ival);
        return;
    case N_FLT:
        print_float_canon(b, nd->fval);
        return;
    case N_NEG:
    case N_NOT:
        sb_printf(b, "(%s", row->tok);
        print_canon(b, e, nd->kid[0]);
        sb_printf(b, ")");
        return;
    case N_ABS:
    case N_MIN:
    case N_MAX:
        sb_printf(b, "%s(", row->tok);
        print_canon(b, e, nd->kid[0]);
        if (row->arity == 2) {
            sb_printf(b, ", ");
            print_canon(b, e, nd->kid[1]);
        }
        sb_printf(b, ")");
        return;
    case N_SEL:
        sb_printf(b, "(");
        print_canon(b, e, nd->kid[0]);
        sb_printf(b, " ? ");
        print_canon(b, e, nd->kid[1]);
        sb_printf(b, " : ");
        print_canon(b, e, nd->kid[2]);
        sb_printf(b, ")");
        return;
    default:
        sb_printf(b, "(");
        print_canon(b, e, nd->kid[0]);
        sb_printf(b, " %s ", row->tok);
        print_canon(b, e, nd->kid[1]);
        sb_printf(b, ")");
        return;
    }
}

/* C++ for the device: helper calls, a, b, and literals as exact hex of the parsed value. */
static void print_cxx(sbuf *b, const wp_expr *e, int id) {
    const node *nd = &e->nodes[id];
    switch (nd->kind) {
    case N_A:
        sb_printf(b, "a");
        return;
    case N_B:
        sb_printf(b, "b");
        return;
    case N_INT:
        sb_printf(b, "(C)0x%llxull", (unsigned long long)nd->ival);
        return;
    case N_FLT:
        sb_printf(b, "(C)%a", nd->fval);
        return;
    default:
        break;
    }
    const op_row *row = &op_rows[nd->kind];
    sb_printf(b, "%s(", row->helper);
    for (int i = 0; i < row->arity; i++) {
        if (i) sb_printf(b, ", ");
        print_cxx(b, e, nd->kid[i]);
    }
    sb_printf(b, ")");
}

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
    const op_row *row = &op_rows[nd->kind];
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
    const op_row *row = &op_rows[nd->kind];
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
    const op_row *row = &op_rows[nd->kind];
    double x = eval_f64(e, nd->kid[0], a, b);
    double y = row->arity == 2 ? eval_f64(e, nd->kid[1], a, b) : 0.0;
    return row->fd ? row->fd(x, y) : 0.0;
}

/* One evaluation in f32 (f32, f16, bf16): either the tree or one builtin row. */
static float apply_f32(const wp_op *op, float x, float y) {
    if (op->kind == WP_OP_EXPR) return eval_f32(op->expr, op->expr->root, x, y);
    const op_row *row = &op_rows[builtin_rows[op->kind].kind];
    return row->ff ? row->ff(x, y) : 0.0f;
}

static double apply_f64(const wp_op *op, double x, double y) {
    if (op->kind == WP_OP_EXPR) return eval_f64(op->expr, op->expr->root, x, y);
    const op_row *row = &op_rows[builtin_rows[op->kind].kind];
    return row->fd ? row->fd(x, y) : 0.0;
}

static uint64_t apply_int(const wp_op *op, wp_type t, uint64_t x, uint64_t y) {
    if (op->kind == WP_OP_EXPR) return eval_int(op->expr, op->expr->root, t, x, y);
    return op_rows[builtin_rows[op->kind].kind].fi(t, x, y);
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

static int parse_builtin(const char *s, int len) {
    while (len > 0 && isspace((unsigned char)*s)) s++, len--;
    while (len > 0 && isspace((unsigned char)s[len - 1])) len--;
    for (int k = 0; k < WP_OP_EXPR; k++)
        if ((int)strlen(builtin_rows[k].name) == len && memcmp(builtin_rows[k].name, s, (size_t)len) == 0) return k;
    return -1;
}

static int parse_expression(parser *p, wp_op *out) {
    if (advance(p) < 0) return -1;
    if (p->cur.kind == T_END) return fail_at(p, p->cur.pos, "empty operator");
    int root = parse_cond(p);
    if (root < 0) return -1;
    if (p->cur.kind != T_END) return fail_token(p, &p->cur, "an operator or end of input");
    p->e->root = root;
    sbuf b = {out->text, sizeof out->text, 0, false};
    print_canon(&b, p->e, root);
    if (b.overflow) return fail_at(p, 0, "expression too long once written in canonical form");
    return 0;
}

int wp_op_parse(const char *s, wp_type t, const char *field, wp_op *out, wp_err *err) {
    memset(out, 0, sizeof *out);
    if (!s) return WP_FAIL(err, 400, "bad_op", field, "operator missing");
    if ((unsigned)t >= WP_TYPE_COUNT) return WP_FAIL(err, 400, "bad_op", field, "unknown type");
    size_t len = strnlen(s, WP_EXPR_MAX_LEN + 1);
    if (len > WP_EXPR_MAX_LEN)
        return WP_FAIL(err, 400, "bad_op", field, "operator longer than %d characters", WP_EXPR_MAX_LEN);
    int k = parse_builtin(s, (int)len);
    if (k >= 0) {
        if (op_rows[builtin_rows[k].kind].int_only && wp_type_is_float(t))
            return WP_FAIL(err, 400, "bad_op", field, "operator '%s' is only for integer types, not %s",
                           builtin_rows[k].name, wp_type_name(t));
        out->kind = (wp_op_kind)k;
        snprintf(out->text, sizeof out->text, "%s", builtin_rows[k].name);
        return 0;
    }
    /* Every node consumes at least one character of input, so len + 1 nodes always suffice. */
    int cap = (int)len + 1;
    wp_expr *e = calloc(1, sizeof *e + (size_t)cap * sizeof(node));
    if (!e) return WP_FAIL(err, 500, "no_memory", field, "out of memory parsing the operator");
    e->cap = cap;
    parser p = {.s = s, .len = (int)len, .type = t, .field = field, .err = err, .e = e};
    if (parse_expression(&p, out) < 0) {
        free(e);
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->kind = WP_OP_EXPR;
    out->expr = e;
    return 0;
}

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
    if (is_float && op_rows[builtin_rows[op->kind].kind].int_only) return false;
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

int wp_op_cxx(const wp_op *op, wp_type t, char *type_name, size_t tn, char *definition, size_t dn) {
    if (!type_name || !definition || tn == 0 || dn == 0) return -1;
    if ((unsigned)op->kind >= WP_OP_COUNT || (unsigned)t >= WP_TYPE_COUNT) return -1;
    sbuf name = {type_name, tn, 0, false}, def = {definition, dn, 0, false};
    definition[0] = 0;
    if (op->kind != WP_OP_EXPR) {
        sb_printf(&name, "%s<%s>", builtin_rows[op->kind].functor, wp_type_cxx(t));
        return name.overflow ? -1 : 0;
    }
    if (!op->expr) return -1;
    sb_printf(&name, "wp_op_expr");
    sb_printf(&def, "struct wp_op_expr {\n"
                    "    template <typename T> __device__ T operator()(T a_, T b_) const {\n"
                    "        typedef typename wp_calc<T>::type C;\n"
                    "        const C a = wp_to_calc(a_), b = wp_to_calc(b_);\n"
                    "        (void)a;\n"
                    "        (void)b;\n"
                    "        return wp_from_calc<T>(");
    print_cxx(&def, op->expr, op->expr->root);
    sb_printf(&def, ");\n    }\n};\n");
    return name.overflow || def.overflow ? -1 : 0;
}
