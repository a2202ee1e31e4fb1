/* expr_parse.c — the expression grammar over `a` and `b` (DESIGN.md §3): client text into wp_expr's flat
 * node array, every error naming the 0-based position at fault; and wp_op_parse, which takes a builtin
 * name as well. Owns: nothing past a call (the tree it makes is the wp_op's). */
#include "expr_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The limit a client meets is the height of the tree (so evaluation and the emitted C++ stay shallow).
 * Syntactic nesting (parentheses, unary operators, calls, ?:) is capped only to bound the parser's
 * recursion, loosely enough that the canonical text of any accepted tree (at most two levels per
 * tree level) parses again. */
#define EXPR_MAX_HEIGHT 32
#define EXPR_MAX_NEST (2 * EXPR_MAX_HEIGHT + 2)

#define EXPR_TOKEN_ECHO 24 /* at most this much client text is quoted back in an error */

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
    {"a", T_A, N_A},        {"b", T_B, N_B}, {"min", T_CALL, N_MIN}, {"max", T_CALL, N_MAX},
    {"abs", T_CALL, N_ABS}, {"x", T_A, N_A}, {"y", T_B, N_B}, /* a map's spellings of a and b (wp_map_parse) */
};

typedef struct {
    const char *s;
    int len;
    wp_type type;
    const char *field;
    const char *code; /* "bad_op", or "bad_map" for a map */
    bool map;         /* a map: the variables are x (and y with has_y), never a and b */
    bool has_y;
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
    return WP_FAIL(p->err, 400, p->code, p->field, "%s at position %d", what, pos);
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

/* a and b in an operator; x (and y with a second input) in a map. */
static bool var_allowed(const parser *p, const char *name) {
    if (!p->map) return name[0] == 'a' || name[0] == 'b';
    return name[0] == 'x' || (name[0] == 'y' && p->has_y);
}

static int lex_name(parser *p, int pos, token *tk) {
    const char *s = p->s + pos;
    int n = 0;
    while (is_name_char(s[n])) n++;
    tk->len = n;
    for (size_t i = 0; i < WP_ARRAY_LEN(name_rows); i++) {
        if (name_rows[i].kind != T_CALL && !var_allowed(p, name_rows[i].name)) continue;
        if ((int)strlen(name_rows[i].name) == n && memcmp(name_rows[i].name, s, (size_t)n) == 0) {
            tk->kind = name_rows[i].kind;
            tk->op = name_rows[i].op;
            return 0;
        }
    }
    char what[64];
    describe(s, n, what, sizeof what);
    if (p->map && n == 1 && s[0] == 'y')
        return fail_at(p, pos, "the map uses y but the request has no second input (data2, data2_b64, buffer2, shm2)");
    return fail_at(p, pos, "unknown name %s (only %s, min, max, abs)", what,
                   p->map ? (p->has_y ? "x, y" : "x") : "a, b");
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
    const op_row *row = &expr_op_rows[kind];
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
    int args[2] = {-1, -1}, arity = expr_op_rows[fn.op].arity;
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
        return fail_token(p, &p->cur, p->map ? "x, a number, '(' or a function" : "a, b, a number, '(' or a function");
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
    while (lhs >= 0 && p->cur.kind == T_OP && expr_op_rows[p->cur.op].prec >= min_prec &&
           expr_op_rows[p->cur.op].arity == 2) {
        token op = p->cur;
        if (check_type(p, op.op, op.pos) < 0 || advance(p) < 0) return -1;
        int rhs = parse_binary(p, expr_op_rows[op.op].prec + 1);
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

/* ---- the public face ---- */

static int parse_builtin(const char *s, int len) {
    while (len > 0 && isspace((unsigned char)*s)) s++, len--;
    while (len > 0 && isspace((unsigned char)s[len - 1])) len--;
    for (int k = 0; k < WP_OP_EXPR; k++)
        if ((int)strlen(expr_builtin_rows[k].name) == len && memcmp(expr_builtin_rows[k].name, s, (size_t)len) == 0)
            return k;
    return -1;
}

static int parse_expression(parser *p, wp_op *out) {
    if (advance(p) < 0) return -1;
    if (p->cur.kind == T_END) return fail_at(p, p->cur.pos, p->map ? "empty map" : "empty operator");
    int root = parse_cond(p);
    if (root < 0) return -1;
    if (p->cur.kind != T_END) return fail_token(p, &p->cur, "an operator or end of input");
    p->e->root = root;
    sbuf b = {out->text, sizeof out->text, 0, false};
    expr_print_canon(&b, p->e, root);
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
        if (expr_op_rows[expr_builtin_rows[k].kind].int_only && wp_type_is_float(t))
            return WP_FAIL(err, 400, "bad_op", field, "operator '%s' is only for integer types, not %s",
                           expr_builtin_rows[k].name, wp_type_name(t));
        out->kind = (wp_op_kind)k;
        snprintf(out->text, sizeof out->text, "%s", expr_builtin_rows[k].name);
        return 0;
    }
    /* Every node consumes at least one character of input, so len + 1 nodes always suffice. */
    int cap = (int)len + 1;
    wp_expr *e = calloc(1, sizeof *e + (size_t)cap * sizeof(node));
    if (!e) return WP_FAIL(err, 500, "no_memory", field, "out of memory parsing the operator");
    e->cap = cap;
    parser p = {.s = s, .len = (int)len, .type = t, .field = field, .code = "bad_op", .err = err, .e = e};
    if (parse_expression(&p, out) < 0) {
        free(e);
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->kind = WP_OP_EXPR;
    out->expr = e;
    return 0;
}

/* A map: the same grammar over x (and y when has_y), never a builtin name; errors are 400 "bad_map". */
int wp_map_parse(const char *s, wp_type t, bool has_y, const char *field, wp_op *out, wp_err *err) {
    memset(out, 0, sizeof *out);
    if (!s) return WP_FAIL(err, 400, "bad_map", field, "map missing");
    if ((unsigned)t >= WP_TYPE_COUNT) return WP_FAIL(err, 400, "bad_map", field, "unknown type");
    size_t len = strnlen(s, WP_EXPR_MAX_LEN + 1);
    if (len > WP_EXPR_MAX_LEN)
        return WP_FAIL(err, 400, "bad_map", field, "map longer than %d characters", WP_EXPR_MAX_LEN);
    int cap = (int)len + 1;
    wp_expr *e = calloc(1, sizeof *e + (size_t)cap * sizeof(node));
    if (!e) return WP_FAIL(err, 500, "no_memory", field, "out of memory parsing the map");
    e->cap = cap;
    e->map = true;
    parser p = {.s = s,
                .len = (int)len,
                .type = t,
                .field = field,
                .code = "bad_map",
                .map = true,
                .has_y = has_y,
                .err = err,
                .e = e};
    if (parse_expression(&p, out) < 0) {
        free(e);
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->kind = WP_OP_EXPR;
    out->expr = e;
    return 0;
}
