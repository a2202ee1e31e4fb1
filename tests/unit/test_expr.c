/* test_expr.c — kernels/expr.c: rejected inputs and the position each error names, canonical text,
 * evaluation per type (wrap-around, division by zero, INT_MIN / -1, shifts, NaN, signed zeros,
 * f32 never widened, f16/bf16 rounded once), builtins and their identities, and the emitted C++
 * (only helper names, a, b and hex literals: no client text). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/expr.h"
#include "t.h"

#define I32_MIN 0x80000000ull
#define I64_MIN 0x8000000000000000ull
#define ONES64 0xffffffffffffffffull

/* ---- rejected inputs ---- */

static void test_rejects(void) {
    static const struct {
        const char *text;
        wp_type t;
        int pos;          /* the "at position N" the message must give; -1: no position */
        const char *says; /* a piece of the message */
    } rows[] = {
        {"system", WP_I32, 0, "'system'"},
        {"a; b", WP_I32, 1, "';'"},
        {"a + \"x\"", WP_I32, 4, "'\"'"},
        {"{a}", WP_I32, 0, "'{'"},
        {"a + b }", WP_I32, 6, "'}'"},
        {"#include", WP_I32, 0, "'#'"},
        {"a @ b", WP_F32, 2, "'@'"},
        {"a $", WP_F32, 2, "'$'"},
        {"a\x01", WP_I32, 1, "byte 0x01"},
        {"a \xff", WP_I32, 2, "byte 0xff"},
        {"a = b", WP_I32, 2, "'='"},
        {"!a", WP_I32, 0, "'!'"},
        {"a[0]", WP_I32, 1, "'['"},
        {"a.b", WP_I32, 1, "'.'"},
        {"a && b", WP_I32, 3, "'&'"},
        {"/* */ a", WP_I32, 0, "'/'"},
        {"__a", WP_I32, 0, "'__a'"},
        {"ab", WP_I32, 0, "'ab'"},
        {"A + b", WP_I32, 0, "'A'"},
        {"sum + 1", WP_I32, 0, "'sum'"},
        {"a + sqrt(b)", WP_F32, 4, "'sqrt'"},
        {"a + printf", WP_I32, 4, "'printf'"},
        {"a + averyveryveryveryverylongidentifier", WP_I32, 4, "..."},
        {"", WP_I32, 0, "empty"},
        {"   ", WP_I32, 3, "empty"},
        {"a +", WP_I32, 3, "end of input"},
        {"a b", WP_I32, 2, "'b'"},
        {"a\nb", WP_I32, 2, "'b'"},
        {"(a + b", WP_I32, 6, "')'"},
        {"a + b)", WP_I32, 5, "')'"},
        {"()", WP_I32, 1, "')'"},
        {"min(a)", WP_I32, 5, "','"},
        {"min(a, b, a)", WP_I32, 8, "')'"},
        {"abs(a, b)", WP_I32, 5, "')'"},
        {"min a", WP_I32, 4, "'('"},
        {"max", WP_I32, -1, NULL}, /* control row: the builtin parses */
        {"a ? b", WP_I32, 5, "':'"},
        {"a ? : b", WP_I32, 4, "':'"},
        {"a ~ b", WP_I32, 2, "'~'"},
        {"1.5 + a", WP_I32, 0, "float literal"},
        {"a + 1e3", WP_U64, 4, "float literal"},
        {"a % b", WP_F32, 2, "'%'"},
        {"a & b", WP_F64, 2, "'&'"},
        {"~a", WP_F16, 0, "'~'"},
        {"a << 1", WP_BF16, 2, "'<<'"},
        {"a >> 1", WP_F32, 2, "'>>'"},
        {"a | b", WP_F32, 2, "'|'"},
        {"a ^ b", WP_F32, 2, "'^'"},
        {"b + (a % 2)", WP_F16, 7, "'%'"},
        {"0x", WP_I32, 0, "hex"},
        {"0xg", WP_I32, 0, "hex"},
        {"1e", WP_F32, 1, "exponent"},
        {"1e+", WP_F32, 1, "exponent"},
        {"1u", WP_U32, 1, "'u'"},
        {"1.5f", WP_F32, 3, "'f'"},
        {"0x1p3", WP_F32, 3, "'p'"},
        {"1.2.3", WP_F32, 3, "'.'"},
        {"99999999999999999999", WP_U64, 0, "out of range"},
        {"0x10000000000000000", WP_U64, 0, "out of range"},
        {"4294967296", WP_I32, 0, "does not fit"},
        {"a + 0x100000000", WP_U32, 4, "does not fit"},
        {"1e999", WP_F64, 0, "out of range"},
        {"and", WP_F32, -1, "only for integer"},
        {"or", WP_F64, -1, "only for integer"},
        {"xor", WP_F16, -1, "only for integer"},
        {" and ", WP_BF16, -1, "only for integer"},
    };
    char field[] = "args.op";
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++) {
        T_CASE(rows[i].text);
        wp_op op;
        wp_err err = {0};
        int rc = wp_op_parse(rows[i].text, rows[i].t, field, &op, &err);
        if (!rows[i].says) {
            CHECK(rc == 0);
            wp_op_free(&op);
            continue;
        }
        CHECK(rc == -1);
        CHECK(err.status == 400);
        CHECK(err.code && strcmp(err.code, "bad_op") == 0);
        CHECK(strcmp(err.field, field) == 0);
        CHECKF(strstr(err.msg, rows[i].says) != NULL, "message: %s", err.msg);
        CHECK(op.expr == NULL && op.text[0] == 0);
        char at[32];
        snprintf(at, sizeof at, "at position %d", rows[i].pos);
        if (rows[i].pos >= 0)
            CHECKF(strstr(err.msg, at) != NULL, "message: %s", err.msg);
        else
            CHECKF(strstr(err.msg, "position") == NULL, "message: %s", err.msg);
    }
}

static void repeat(char *buf, size_t n, const char *prefix, const char *unit, int times, const char *suffix_unit,
                   int suffix_times) {
    snprintf(buf, n, "%s", prefix);
    for (int i = 0; i < times; i++) strncat(buf, unit, n - strlen(buf) - 1);
    for (int i = 0; i < suffix_times; i++) strncat(buf, suffix_unit, n - strlen(buf) - 1);
}

static int parse_msg(const char *s, wp_type t, char *msg, size_t n) {
    wp_op op;
    wp_err err = {0};
    int rc = wp_op_parse(s, t, "op", &op, &err);
    snprintf(msg, n, "%s", err.msg);
    wp_op_free(&op);
    return rc;
}

static void test_limits(void) {
    T_CASE("limits");
    char buf[1024], msg[256];
    repeat(buf, sizeof buf, "a", " ", WP_EXPR_MAX_LEN - 1, "", 0); /* exactly the limit: fine */
    CHECK(strlen(buf) == WP_EXPR_MAX_LEN && parse_msg(buf, WP_I32, msg, sizeof msg) == 0);
    strcat(buf, " ");
    CHECK(parse_msg(buf, WP_I32, msg, sizeof msg) == -1 && strstr(msg, "longer than 256"));
    repeat(buf, sizeof buf, "", "(", 40, "", 0); /* parentheses alone add no depth */
    repeat(buf + strlen(buf), sizeof buf - strlen(buf), "a", ")", 40, "", 0);
    CHECK(parse_msg(buf, WP_I32, msg, sizeof msg) == 0);
    repeat(buf, sizeof buf, "", "(", 70, "", 0); /* but the parser's recursion is bounded */
    repeat(buf + strlen(buf), sizeof buf - strlen(buf), "a", ")", 70, "", 0);
    CHECKF(parse_msg(buf, WP_I32, msg, sizeof msg) == -1 && strstr(msg, "nested deeper than 66"), "%s", msg);
    CHECK(strstr(msg, "at position 66") != NULL); /* the 67th level */
    repeat(buf, sizeof buf, "", "-", 31, "", 0);
    strcat(buf, "a");
    CHECK(parse_msg(buf, WP_I32, msg, sizeof msg) == 0); /* 32 levels: the limit */
    repeat(buf, sizeof buf, "", "-", 32, "", 0);
    strcat(buf, "a");
    CHECKF(parse_msg(buf, WP_I32, msg, sizeof msg) == -1 && strstr(msg, "deeper than 32"), "%s", msg);
    CHECKF(strstr(msg, "at position 0") != NULL, "%s", msg); /* the outermost minus is the 33rd level */
    repeat(buf, sizeof buf, "", "abs(", 40, "", 0);
    repeat(buf + strlen(buf), sizeof buf - strlen(buf), "a", ")", 40, "", 0); /* abs(abs(...abs(a)...)) */
    CHECKF(parse_msg(buf, WP_I32, msg, sizeof msg) == -1 && strstr(msg, "deeper than 32"), "%s", msg);
    repeat(buf, sizeof buf, "", "a?b:", 40, "", 0);
    strcat(buf, "a");
    CHECKF(parse_msg(buf, WP_I32, msg, sizeof msg) == -1 && strstr(msg, "deeper than 32"), "%s", msg);
    repeat(buf, sizeof buf, "a", "+b", 31, "", 0); /* a flat chain of 31 additions is 32 levels */
    CHECK(parse_msg(buf, WP_I32, msg, sizeof msg) == 0);
    repeat(buf, sizeof buf, "a", "+b", 32, "", 0);
    CHECKF(parse_msg(buf, WP_I32, msg, sizeof msg) == -1 && strstr(msg, "deeper than 32"), "%s", msg);
    /* The canonical text of the deepest trees parses again (it adds parentheses, not depth). */
    repeat(buf, sizeof buf, "", "-(", 31, "", 0);
    repeat(buf + strlen(buf), sizeof buf - strlen(buf), "a", ")", 31, "", 0);
    const char *deep[] = {"-------------------------------a", "a?b:a?b:a?b:a?b:a?b:a?b:a?b:a?b:a?b:a?b:a?b:a?b:a",
                          "a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b+a+b", buf};
    for (size_t i = 0; i < WP_ARRAY_LEN(deep); i++) {
        wp_op op, again;
        wp_err err = {0};
        CHECKF(wp_op_parse(deep[i], WP_I32, "op", &op, &err) == 0, "%s: %s", deep[i], err.msg);
        CHECKF(wp_op_parse(op.text, WP_I32, "op", &again, &err) == 0, "%s: %s", op.text, err.msg);
        wp_op_free(&again);
        wp_op_free(&op);
    }
    CHECK(parse_msg(NULL, WP_I32, msg, sizeof msg) == -1);
    CHECK(parse_msg("a", (wp_type)99, msg, sizeof msg) == -1);
}

/* ---- canonical text ---- */

static void test_canonical(void) {
    static const struct {
        const char *text;
        wp_type t;
        const char *canon;
    } rows[] = {
        {"a+b", WP_I32, "(a + b)"},
        {"  a   +\tb ", WP_I32, "(a + b)"},
        {"(a)+(b)", WP_I32, "(a + b)"},
        {"((a + b))", WP_I32, "(a + b)"},
        {"+a", WP_I32, "a"},
        {"a", WP_F32, "a"},
        {"a+b*2", WP_I32, "(a + (b * 2))"},
        {"(a+b)*2", WP_I32, "((a + b) * 2)"},
        {"a-b-a", WP_I32, "((a - b) - a)"},
        {"a/b%2*a", WP_I32, "(((a / b) % 2) * a)"},
        {"a<<1>>2", WP_U32, "((a << 1) >> 2)"},
        {"a+1<<2", WP_U32, "((a + 1) << 2)"},
        {"a < b == b > a", WP_I32, "((a < b) == (b > a))"},
        {"a<=b!=a>=b", WP_I32, "((a <= b) != (a >= b))"},
        {"a & b ^ a | b", WP_I64, "(((a & b) ^ a) | b)"},
        {"a | b ^ a & b", WP_I64, "(a | (b ^ (a & b)))"},
        {"a ? b : a ? 1 : 2", WP_I32, "(a ? b : (a ? 1 : 2))"},
        {"a < b ? a : b", WP_F32, "((a < b) ? a : b)"},
        {"(a ? b : a) ? 1 : 2", WP_I32, "((a ? b : a) ? 1 : 2)"},
        {"-a", WP_I32, "(-a)"},
        {"- -a", WP_I32, "(-(-a))"},
        {"-+-a", WP_I32, "(-(-a))"},
        {"~a", WP_U32, "(~a)"},
        {"-a*b", WP_I32, "((-a) * b)"},
        {"a--b", WP_I32, "(a - (-b))"},
        {"min( a,b )", WP_I32, "min(a, b)"},
        {"max(a,min(b,1))", WP_I32, "max(a, min(b, 1))"},
        {"abs(a-b)", WP_F64, "abs((a - b))"},
        {"0x10", WP_I32, "16"},
        {"a+0x0A", WP_I32, "(a + 10)"},
        {"a+0XfF", WP_I32, "(a + 255)"},
        {"007", WP_I32, "7"},
        {"0xffffffff", WP_I32, "4294967295"},
        {"18446744073709551615", WP_U64, "18446744073709551615"},
        {"1.50", WP_F32, "1.5"},
        {"1.", WP_F32, "1.0"},
        {".5", WP_F32, "0.5"},
        {"15e-1", WP_F64, "1.5"},
        {"0.1", WP_F64, "0.1"},
        {"1e3", WP_F32, "1e+03"},
        {"1000.0", WP_F32, "1e+03"},
        {"2", WP_F32, "2"}, /* an integer literal stays one */
        {"0.0", WP_F16, "0.0"},
        {"1e-320", WP_F64, "1e-320"},
        {"sum", WP_I32, "sum"},
        {" max ", WP_F32, "max"},
        {"prod", WP_BF16, "prod"},
        {"xor", WP_U64, "xor"},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++) {
        T_CASE(rows[i].text);
        wp_op op, again;
        wp_err err = {0};
        if (wp_op_parse(rows[i].text, rows[i].t, "op", &op, &err)) {
            CHECKF(0, "rejected: %s", err.msg);
            continue;
        }
        CHECKF(strcmp(op.text, rows[i].canon) == 0, "canonical '%s', want '%s'", op.text, rows[i].canon);
        /* the canonical text is itself a valid spelling of the same operator */
        CHECK(wp_op_parse(op.text, rows[i].t, "op", &again, &err) == 0);
        CHECK(strcmp(again.text, op.text) == 0 && again.kind == op.kind);
        wp_op_free(&again);
        wp_op_free(&op);
    }
}

/* ---- evaluation ---- */

static uint64_t f32b(float f) { return wp_f32_bits(f); }
static uint64_t f64b(double f) { return wp_f64_bits(f); }

static void test_eval(void) {
    static const struct {
        const char *text;
        wp_type t;
        uint64_t a, b, want;
    } rows[] = {
        /* i32: wrap, /0, %0, INT_MIN / -1, shifts modulo 32, arithmetic >>, abs(INT_MIN) */
        {"a+b", WP_I32, 0x7fffffff, 1, I32_MIN},
        {"a-b", WP_I32, I32_MIN, 1, 0x7fffffff},
        {"a*b", WP_I32, 0x10000, 0x10000, 0},
        {"a*b", WP_I32, 0xffffffff, 0xffffffff, 1},
        {"a/b", WP_I32, 7, 0, 0},
        {"a%b", WP_I32, 7, 0, 0},
        {"a/b", WP_I32, I32_MIN, 0xffffffff, I32_MIN},
        {"a%b", WP_I32, I32_MIN, 0xffffffff, 0},
        {"a/b", WP_I32, 7, 0xffffffff, 0xfffffff9},
        {"a/b", WP_I32, 0xfffffff9, 2, 0xfffffffd}, /* -7 / 2 = -3: truncation */
        {"a%b", WP_I32, 0xfffffff9, 2, 0xffffffff}, /* -7 % 2 = -1 */
        {"a%b", WP_I32, 7, 0xfffffffe, 1},
        {"a<<b", WP_I32, 1, 33, 2},
        {"a<<b", WP_I32, 1, 0xffffffff, I32_MIN}, /* count -1 is 31 */
        {"a<<b", WP_I32, 0x40000000, 1, I32_MIN},
        {"a>>b", WP_I32, I32_MIN, 31, 0xffffffff},
        {"a>>b", WP_I32, I32_MIN, 32, I32_MIN},
        {"a>>b", WP_I32, 0xfffffff9, 1, 0xfffffffc}, /* -7 >> 1 = -4 */
        {"abs(a)", WP_I32, I32_MIN, 0, I32_MIN},
        {"abs(a)", WP_I32, 0xfffffffb, 0, 5},
        {"-a", WP_I32, I32_MIN, 0, I32_MIN},
        {"-a", WP_I32, 1, 0, 0xffffffff},
        {"~a", WP_I32, 0, 0, 0xffffffff},
        {"a<b", WP_I32, 0xffffffff, 1, 1},
        {"a>b", WP_I32, 0xffffffff, 1, 0},
        {"a<=b", WP_I32, 5, 5, 1},
        {"a>=b", WP_I32, 4, 5, 0},
        {"a==b", WP_I32, 5, 5, 1},
        {"a!=b", WP_I32, 5, 5, 0},
        {"min(a,b)", WP_I32, 0xffffffff, 1, 0xffffffff},
        {"max(a,b)", WP_I32, 0xffffffff, 1, 1},
        {"a ? b : 7", WP_I32, 0, 3, 7},
        {"a ? b : 7", WP_I32, 0xffffffff, 3, 3},
        {"a + 0xffffffff", WP_I32, 1, 0, 0},
        {"a & b | 0x100 ^ a", WP_I32, 0xff, 0x0f, 0x1ff},
        {"a + b", WP_I32, 0xdead00000001ull, 0xbeef00000002ull, 3}, /* high garbage ignored */
        {"(a < b) * 10 + (a == b)", WP_I32, 1, 2, 10},
        /* u32 */
        {"a>>b", WP_U32, I32_MIN, 31, 1},
        {"a/b", WP_U32, 0xffffffff, 0xffffffff, 1},
        {"a%b", WP_U32, 7, 0xffffffff, 7},
        {"a/b", WP_U32, 7, 0, 0},
        {"a<b", WP_U32, 0xffffffff, 1, 0},
        {"-a", WP_U32, 1, 0, 0xffffffff},
        {"abs(a)", WP_U32, 0xffffffff, 0, 0xffffffff},
        {"min(a,b)", WP_U32, 0xffffffff, 1, 1},
        {"a<<b", WP_U32, 3, 31, I32_MIN},
        {"a-b", WP_U32, 0, 1, 0xffffffff},
        /* i64 */
        {"a/b", WP_I64, I64_MIN, ONES64, I64_MIN},
        {"a%b", WP_I64, I64_MIN, ONES64, 0},
        {"a/b", WP_I64, 5, 0, 0},
        {"a<<b", WP_I64, 1, 63, I64_MIN},
        {"a<<b", WP_I64, 1, 64, 1},
        {"a>>b", WP_I64, I64_MIN, 63, ONES64},
        {"a*b", WP_I64, 0x100000000ull, 0x100000000ull, 0},
        {"a+b", WP_I64, 0x7fffffffffffffffull, 1, I64_MIN},
        {"a + 18446744073709551615", WP_I64, 1, 0, 0},
        {"abs(a)", WP_I64, I64_MIN, 0, I64_MIN},
        {"a<b", WP_I64, ONES64, 0, 1},
        {"max(a,b)", WP_I64, ONES64, 0, 0},
        {"a%b", WP_I64, 0xfffffffffffffff9ull, 3, ONES64},
        /* u64 */
        {"a>>b", WP_U64, I64_MIN, 63, 1},
        {"a<b", WP_U64, ONES64, 0, 0},
        {"a/b", WP_U64, ONES64, 2, 0x7fffffffffffffffull},
        {"a%b", WP_U64, 10, 0, 0},
        {"a%b", WP_U64, 10, ONES64, 10},
        {"min(a,b)", WP_U64, ONES64, 3, 3},
        /* f32: IEEE in float, never widened; NaN results canonical; min/max and signed zeros */
        {"a+b", WP_F32, 0x3f800000, 0x40000000, 0x40400000},
        {"a*b/b", WP_F32, 0x7f7fffff, 0x40000000, 0x7f800000}, /* overflows in float, not in double */
        {"a+b-a", WP_F32, 0x4cbebc20, 0x3f800000, 0},          /* 1e8 + 1 == 1e8 in float */
        {"a/b", WP_F32, 0x3f800000, 0, 0x7f800000},
        {"a/b", WP_F32, 0xbf800000, 0, 0xff800000},
        {"a/b", WP_F32, 0, 0, 0x7fffffff},
        {"a-b", WP_F32, 0x7f800000, 0x7f800000, 0x7fffffff},
        {"a*b", WP_F32, 0, 0xff800000, 0x7fffffff},
        {"a+b", WP_F32, 0x7fc00001, 0x3f800000, 0x7fffffff},
        {"a+b", WP_F32, 0xffc00001, 0xff800001, 0x7fffffff},
        {"min(a,b)", WP_F32, 0x7fc00001, 0x3f800000, 0x3f800000},
        {"min(a,b)", WP_F32, 0x3f800000, 0x7fc00001, 0x3f800000},
        {"min(a,b)", WP_F32, 0x7fc00001, 0xffc00002, 0xffc00002}, /* both NaN: b, bits kept */
        {"max(a,b)", WP_F32, 0x7fc00001, 0xffc00002, 0xffc00002},
        {"max(a,b)", WP_F32, 0xff800000, 0x7fc00001, 0xff800000},
        {"min(a,b)", WP_F32, 0, 0x80000000, 0}, /* tie: the first operand */
        {"min(a,b)", WP_F32, 0x80000000, 0, 0x80000000},
        {"max(a,b)", WP_F32, 0, 0x80000000, 0},
        {"max(a,b)", WP_F32, 0x80000000, 0, 0x80000000},
        {"min(a,b)", WP_F32, 0x40000000, 0x3f800000, 0x3f800000},
        {"max(a,b)", WP_F32, 0xff800000, 0x3f800000, 0x3f800000},
        {"abs(a)", WP_F32, 0x80000000, 0, 0},
        {"abs(a)", WP_F32, 0xffc00001, 0, 0x7fc00001}, /* sign bit only */
        {"-a", WP_F32, 0x7fc00001, 0, 0xffc00001},
        {"-a", WP_F32, 0, 0, 0x80000000},
        {"a<b", WP_F32, 0x7fc00000, 0x3f800000, 0},
        {"a>=b", WP_F32, 0x7fc00000, 0x7fc00000, 0},
        {"a!=b", WP_F32, 0x7fc00000, 0x7fc00000, 0x3f800000},
        {"a==b", WP_F32, 0, 0x80000000, 0x3f800000},
        {"a<b", WP_F32, 0xbf800000, 0x3f800000, 0x3f800000},
        {"a ? 1 : 2", WP_F32, 0x7fc00000, 0, 0x3f800000}, /* NaN != 0 */
        {"a ? 1 : 2", WP_F32, 0x80000000, 0, 0x40000000}, /* -0 == 0 */
        {"a + 0.1", WP_F32, 0, 0, 0x3dcccccd},
        {"a + 16777217", WP_F32, 0, 0, 0x4b800000},
        {"a + 0x1000001", WP_F32, 0, 0, 0x4b800000},
        {"a*b", WP_F32, 0x00000001, 0x3f000000, 0},          /* 2^-150 ties to even: 0 */
        {"a*b", WP_F32, 0x00000003, 0x3f000000, 0x00000002}, /* subnormals kept */
        {"a - -1.5", WP_F32, 0x3f800000, 0, 0x40200000},
        {"(a*b+a)*2.5e-1", WP_F32, 0x3fc00000, 0x40000000, 0x3f900000},
        /* f64 */
        {"a+b", WP_F64, 0x3fb999999999999aull, 0x3fc999999999999aull, 0x3fd3333333333334ull},
        {"a/b", WP_F64, 0, 0, 0x7fffffffffffffffull},
        {"a*b", WP_F64, 0x7ff0000000000000ull, 0, 0x7fffffffffffffffull},
        {"a+b", WP_F64, 0x7ff0000000000123ull, 0, 0x7fffffffffffffffull},
        {"min(a,b)", WP_F64, 0x7ff8000000000001ull, 0x4000000000000000ull, 0x4000000000000000ull},
        {"min(a,b)", WP_F64, 0x8000000000000000ull, 0, 0x8000000000000000ull},
        {"abs(a)", WP_F64, 0xfff0000000000000ull, 0, 0x7ff0000000000000ull},
        {"-a", WP_F64, 0, 0, 0x8000000000000000ull},
        {"a + 0.1", WP_F64, 0, 0, 0x3fb999999999999aull},
        {"a < b", WP_F64, 0, 0x3ff0000000000000ull, 0x3ff0000000000000ull},
        {"a*b", WP_F64, 0x7fefffffffffffffull, 0x4000000000000000ull, 0x7ff0000000000000ull},
        /* f16: computed in f32, rounded once at the end */
        {"a+b", WP_F16, 0x3c00, 0x1000, 0x3c00},   /* 1 + 2^-11: tie to even */
        {"a+b", WP_F16, 0x3c01, 0x1000, 0x3c02},   /* tie to even, upwards */
        {"a+b-a", WP_F16, 0x6800, 0x3c00, 0x3c00}, /* 2048 + 1 - 2048 = 1, no rounding in between */
        {"a*b", WP_F16, 0x7bff, 0x4000, 0x7c00},
        {"a/b", WP_F16, 0, 0, 0x7fff},
        {"a+b", WP_F16, 0x7c01, 0x3c00, 0x7fff},
        {"min(a,b)", WP_F16, 0x7e00, 0x3c00, 0x3c00},
        {"min(a,b)", WP_F16, 0x7e00, 0xfe01, 0x7fff},
        {"max(a,b)", WP_F16, 0x8000, 0x0000, 0x8000},
        {"abs(a)", WP_F16, 0xbc00, 0, 0x3c00},
        {"-a", WP_F16, 0x3c00, 0, 0xbc00},
        {"a < b", WP_F16, 0x3c00, 0x4000, 0x3c00},
        {"a + 0.1", WP_F16, 0, 0, 0x2e66},
        {"a*b", WP_F16, 0x0001, 0x3800, 0x0000}, /* 2^-25 ties to even: 0 */
        {"a*b", WP_F16, 0x0003, 0x3800, 0x0002},
        {"a + 65520", WP_F16, 0, 0, 0x7c00},
        /* bf16 */
        {"a+b", WP_BF16, 0x3f80, 0x3b80, 0x3f80}, /* 1 + 2^-8: tie to even */
        {"a+b-a", WP_BF16, 0x4380, 0x3f80, 0x3f80},
        {"max(a,b)", WP_BF16, 0xff81, 0x3f80, 0x3f80},
        {"a+b", WP_BF16, 0xff81, 0x3f80, 0x7fff},
        {"-a", WP_BF16, 0xff81, 0, 0x7fff}, /* any NaN rounds to 0x7fff */
        {"a*b", WP_BF16, 0x7f7f, 0x4000, 0x7f80},
        {"a ? b : 3", WP_BF16, 0x8000, 0x3f80, 0x4040},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++) {
        T_CASE(rows[i].text);
        wp_op op;
        wp_err err = {0};
        if (wp_op_parse(rows[i].text, rows[i].t, "op", &op, &err)) {
            CHECKF(0, "rejected for %s: %s", wp_type_name(rows[i].t), err.msg);
            continue;
        }
        uint64_t got = wp_op_apply(&op, rows[i].t, rows[i].a, rows[i].b);
        CHECKF(got == rows[i].want, "%s %s(%llx, %llx) = %llx, want %llx", wp_type_name(rows[i].t), rows[i].text,
               (unsigned long long)rows[i].a, (unsigned long long)rows[i].b, (unsigned long long)got,
               (unsigned long long)rows[i].want);
        wp_op_free(&op);
    }
    (void)f32b;
    (void)f64b;
}

/* ---- builtins and identities ---- */

static void test_builtins(void) {
    static const struct {
        const char *name;
        wp_type t;
        uint64_t a, b, want;
    } rows[] = {
        {"sum", WP_I32, 0x7fffffff, 1, I32_MIN},
        {"prod", WP_I32, 0xffffffff, 0xfffffffe, 2},
        {"min", WP_I32, 0xffffffff, 1, 0xffffffff},
        {"max", WP_U32, 0xffffffff, 1, 0xffffffff},
        {"and", WP_U32, 0xf0f0, 0xff00, 0xf000},
        {"or", WP_I64, 0xf0f0, 0xff00, 0xfff0},
        {"xor", WP_U64, ONES64, 1, ONES64 - 1},
        {"sum", WP_F32, 0x3f800000, 0x40000000, 0x40400000},
        {"prod", WP_F64, 0x4000000000000000ull, 0x4008000000000000ull, 0x4018000000000000ull},
        {"min", WP_F32, 0x7fc00000, 0x3f800000, 0x3f800000},
        {"max", WP_F32, 0x80000000, 0, 0x80000000},
        {"sum", WP_F16, 0x3c00, 0x1000, 0x3c00},
        {"sum", WP_F16, 0x7bff, 0x7bff, 0x7c00},
        {"max", WP_F16, 0x7e00, 0xbc00, 0xbc00},
        {"prod", WP_BF16, 0x4000, 0x4040, 0x40c0},
        {"min", WP_BF16, 0xff81, 0xff82, 0x7fff},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++) {
        T_CASE(rows[i].name);
        wp_op op;
        wp_err err = {0};
        CHECK(wp_op_parse(rows[i].name, rows[i].t, "op", &op, &err) == 0);
        CHECK(op.kind < WP_OP_EXPR && op.expr == NULL);
        uint64_t got = wp_op_apply(&op, rows[i].t, rows[i].a, rows[i].b);
        CHECKF(got == rows[i].want, "%s %s = %llx", wp_type_name(rows[i].t), rows[i].name, (unsigned long long)got);
        wp_op_free(&op);
    }

    static const struct {
        wp_op_kind k;
        wp_type t;
        uint64_t id;
    } ids[] = {
        {WP_OP_SUM, WP_I32, 0},
        {WP_OP_PROD, WP_I32, 1},
        {WP_OP_MIN, WP_I32, 0x7fffffff},
        {WP_OP_MAX, WP_I32, I32_MIN},
        {WP_OP_MIN, WP_U32, 0xffffffff},
        {WP_OP_MAX, WP_U32, 0},
        {WP_OP_MIN, WP_I64, 0x7fffffffffffffffull},
        {WP_OP_MAX, WP_I64, I64_MIN},
        {WP_OP_MIN, WP_U64, ONES64},
        {WP_OP_MAX, WP_U64, 0},
        {WP_OP_AND, WP_I32, 0xffffffff},
        {WP_OP_AND, WP_U64, ONES64},
        {WP_OP_OR, WP_U32, 0},
        {WP_OP_XOR, WP_I64, 0},
        {WP_OP_SUM, WP_F32, 0},
        {WP_OP_PROD, WP_F32, 0x3f800000},
        {WP_OP_MIN, WP_F32, 0x7f800000},
        {WP_OP_MAX, WP_F32, 0xff800000},
        {WP_OP_PROD, WP_F64, 0x3ff0000000000000ull},
        {WP_OP_MIN, WP_F64, 0x7ff0000000000000ull},
        {WP_OP_MAX, WP_F64, 0xfff0000000000000ull},
        {WP_OP_PROD, WP_F16, 0x3c00},
        {WP_OP_MIN, WP_F16, 0x7c00},
        {WP_OP_MAX, WP_F16, 0xfc00},
        {WP_OP_PROD, WP_BF16, 0x3f80},
        {WP_OP_MIN, WP_BF16, 0x7f80},
        {WP_OP_MAX, WP_BF16, 0xff80},
    };
    /* Values that an identity must leave unchanged (-0 left out: +0 + -0 is +0). */
    static const uint64_t samples[] = {1,
                                       2,
                                       0x7f,
                                       0x3c00,
                                       0x3f80,
                                       0x3f800000,
                                       0xbf800000,
                                       0x4000000000000000ull,
                                       0xc000000000000000ull,
                                       0x7fffffff,
                                       0x80000001,
                                       ONES64,
                                       0x7bff,
                                       0xfbff};
    for (size_t i = 0; i < WP_ARRAY_LEN(ids); i++) {
        T_CASE(wp_type_name(ids[i].t));
        wp_op op = {.kind = ids[i].k};
        uint64_t id = 0;
        CHECK(wp_op_identity(&op, ids[i].t, &id));
        CHECKF(id == ids[i].id, "identity %d for %s = %llx", (int)ids[i].k, wp_type_name(ids[i].t),
               (unsigned long long)id);
        for (size_t j = 0; j < WP_ARRAY_LEN(samples); j++) {
            uint64_t x = samples[j] & wp_type_bitmask(ids[i].t);
            if (wp_value_cmp(ids[i].t, x, x) == 2) continue; /* a NaN comes back canonical, not as itself */
            CHECK(wp_op_apply(&op, ids[i].t, id, x) == x);
            CHECK(wp_op_apply(&op, ids[i].t, x, id) == x);
        }
    }
    T_CASE("no identity");
    uint64_t id = 42;
    wp_op andf = {.kind = WP_OP_AND}, expr;
    CHECK(!wp_op_identity(&andf, WP_F32, &id));
    wp_err err = {0};
    CHECK(wp_op_parse("a+b", WP_I32, "op", &expr, &err) == 0);
    CHECK(!wp_op_identity(&expr, WP_I32, &id) && id == 42);
    wp_op_free(&expr);
}

/* ---- emitted C++ ---- */

static bool allowed_word(const char *w, size_t n) {
    static const char *words[] = {
        "struct", "wp_op_expr",   "template", "typename", "T",      "__device__", "operator", "a_",         "b_",
        "const",  "typedef",      "wp_calc",  "type",     "C",      "a",          "b",        "wp_to_calc", "void",
        "return", "wp_from_calc", "wp_add",   "wp_sub",   "wp_mul", "wp_div",     "wp_mod",   "wp_and",     "wp_or",
        "wp_xor", "wp_not",       "wp_neg",   "wp_shl",   "wp_shr", "wp_lt",      "wp_le",    "wp_gt",      "wp_ge",
        "wp_eq",  "wp_ne",        "wp_sel",   "wp_min",   "wp_max", "wp_abs",
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(words); i++)
        if (strlen(words[i]) == n && memcmp(words[i], w, n) == 0) return true;
    return false;
}

/* Every identifier is ours and every number a hex literal: nothing the client typed survives. */
static bool cxx_is_clean(const char *s, char *bad, size_t bn) {
    for (size_t i = 0; s[i];) {
        unsigned char c = (unsigned char)s[i];
        if (isalpha(c) || c == '_') {
            size_t n = 0;
            while (isalnum((unsigned char)s[i + n]) || s[i + n] == '_') n++;
            if (!allowed_word(s + i, n)) return snprintf(bad, bn, "%.*s", (int)n, s + i), false;
            i += n;
        } else if (isdigit(c)) {
            if (strncmp(s + i, "0x", 2) != 0) return snprintf(bad, bn, "%.8s", s + i), false;
            i += 2;
            while (isxdigit((unsigned char)s[i]) || strchr(".p+-ul", s[i])) i++;
        } else if (strchr(" \n(){}<>;:,=", c)) {
            i++;
        } else {
            return snprintf(bad, bn, "char %c", c), false;
        }
    }
    return true;
}

static void test_cxx(void) {
    static const struct {
        const char *text;
        wp_type t;
        const char *type_name; /* NULL: check the definition instead */
        const char *body;      /* the tree inside wp_from_calc<T>( ... ) */
    } rows[] = {
        {"max", WP_F32, "wp_op_max<float>", NULL},
        {"sum", WP_I32, "wp_op_sum<int>", NULL},
        {"prod", WP_U32, "wp_op_prod<unsigned>", NULL},
        {"min", WP_I64, "wp_op_min<long long>", NULL},
        {"xor", WP_U64, "wp_op_xor<unsigned long long>", NULL},
        {"and", WP_U32, "wp_op_and<unsigned>", NULL},
        {"or", WP_I32, "wp_op_or<int>", NULL},
        {"sum", WP_F64, "wp_op_sum<double>", NULL},
        {"max", WP_F16, "wp_op_max<__half>", NULL},
        {"min", WP_BF16, "wp_op_min<__nv_bfloat16>", NULL},
        {"a + b", WP_I32, NULL, "wp_add(a, b)"},
        {"a*2 - 0x10", WP_I32, NULL, "wp_sub(wp_mul(a, (C)0x2ull), (C)0x10ull)"},
        {"a + 1.5", WP_F32, NULL, "wp_add(a, (C)0x1.8p+0)"},
        {"a * 0.1", WP_F16, NULL, "wp_mul(a, (C)0x1.999999999999ap-4)"},
        {"-a < b ? ~a : a % b", WP_I64, NULL, "wp_sel(wp_lt(wp_neg(a), b), wp_not(a), wp_mod(a, b))"},
        {"min(a, b) + max(a, b) + abs(a)", WP_F64, NULL, "wp_add(wp_add(wp_min(a, b), wp_max(a, b)), wp_abs(a))"},
        {"a << b >> 1 & a | b ^ a", WP_U32, NULL, "wp_or(wp_and(wp_shr(wp_shl(a, b), (C)0x1ull), a), wp_xor(b, a))"},
        {"a <= b == (a >= b) != (a > b)", WP_U64, NULL, "wp_ne(wp_eq(wp_le(a, b), wp_ge(a, b)), wp_gt(a, b))"},
        {"a / b", WP_BF16, NULL, "wp_div(a, b)"},
        {"0.0", WP_F32, NULL, "(C)0x0p+0"},
        {"18446744073709551615", WP_U64, NULL, "(C)0xffffffffffffffffull"},
        {"a + 1e-320", WP_F64, NULL, "wp_add(a, (C)0x0.00000000007e8p-1022)"},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++) {
        T_CASE(rows[i].text);
        wp_op op;
        wp_err err = {0};
        char tn[128], def[2048], bad[64] = "";
        if (wp_op_parse(rows[i].text, rows[i].t, "op", &op, &err)) {
            CHECKF(0, "rejected: %s", err.msg);
            continue;
        }
        CHECK(wp_op_cxx(&op, rows[i].t, tn, sizeof tn, def, sizeof def) == 0);
        if (rows[i].type_name) {
            CHECKF(strcmp(tn, rows[i].type_name) == 0, "type name %s", tn);
            CHECK(def[0] == 0);
        } else {
            CHECK(strcmp(tn, "wp_op_expr") == 0);
            char want[512];
            snprintf(want, sizeof want, "return wp_from_calc<T>(%s);", rows[i].body);
            CHECKF(strstr(def, want) != NULL, "definition:\n%s", def);
            CHECK(strstr(def, "struct wp_op_expr {") == def);
            CHECK(strstr(def, "template <typename T> __device__ T operator()(T a_, T b_) const {") != NULL);
            CHECK(strstr(def, "typedef typename wp_calc<T>::type C;") != NULL);
            CHECKF(cxx_is_clean(def, bad, sizeof bad), "unexpected '%s' in\n%s", bad, def);
        }
        CHECK(wp_op_cxx(&op, rows[i].t, tn, 5, def, sizeof def) == -1); /* buffers too small */
        if (!rows[i].type_name) CHECK(wp_op_cxx(&op, rows[i].t, tn, sizeof tn, def, 40) == -1);
        wp_op_free(&op);
    }
}

/* ---- copy, free, and random inputs ---- */

static void test_copy(void) {
    T_CASE("copy");
    wp_op op, dup;
    wp_err err = {0};
    CHECK(wp_op_parse("a * b + 1", WP_I32, "op", &op, &err) == 0);
    CHECK(wp_op_copy(&dup, &op) == 0);
    CHECK(dup.expr && dup.expr != op.expr && strcmp(dup.text, op.text) == 0);
    wp_op_free(&op);
    CHECK(op.expr == NULL);
    CHECK(wp_op_apply(&dup, WP_I32, 3, 4) == 13);
    wp_op_free(&dup);
    wp_op_free(&dup); /* twice is harmless */
    wp_op_free(NULL);
    CHECK(wp_op_parse("sum", WP_I32, "op", &op, &err) == 0);
    CHECK(wp_op_copy(&dup, &op) == 0 && dup.kind == WP_OP_SUM && dup.expr == NULL);
}

/* Random strings over the grammar's alphabet: whatever parses re-parses from its canonical text to
 * the same text and the same values, and emits clean C++. Nothing may crash (ASan watches). */
static void test_random(void) {
    T_CASE("random");
    static const char alphabet[] = "ab+-*/%&|^~<>=!?:(),  01x9.5e";
    static const char *words[] = {"min(", "max(", "abs(", "a", "b", "0x7f", "1.5", " ? ", " : ", "<<", ">>"};
    unsigned seed = 12345;
    int parsed = 0, bad = 0;
    char s[96], tn[128], def[8192], why[64];
    for (int iter = 0; iter < 40000; iter++) {
        size_t n = 0;
        int parts = 1 + (int)(rand_r(&seed) % 12);
        for (int k = 0; k < parts && n + 8 < sizeof s; k++) {
            if (rand_r(&seed) % 2)
                s[n++] = alphabet[rand_r(&seed) % (sizeof alphabet - 1)];
            else {
                const char *w = words[rand_r(&seed) % WP_ARRAY_LEN(words)];
                memcpy(s + n, w, strlen(w));
                n += strlen(w);
            }
        }
        s[n] = 0;
        wp_type t = (wp_type)(iter % WP_TYPE_COUNT);
        wp_op op, again;
        wp_err err = {0};
        if (wp_op_parse(s, t, "op", &op, &err)) {
            if (err.status != 400 || strcmp(err.field, "op") != 0) bad++;
            continue;
        }
        parsed++;
        /* canonical text longer than the input limit cannot be sent back; everything else can */
        if (strlen(op.text) > WP_EXPR_MAX_LEN) {
            wp_op_free(&op);
            continue;
        }
        if (wp_op_parse(op.text, t, "op", &again, &err) || strcmp(again.text, op.text)) {
            if (bad++ < 5) fprintf(stderr, "  '%s' -> '%s' does not re-parse the same\n", s, op.text);
            wp_op_free(&op);
            continue;
        }
        for (int v = 0; v < 4; v++) {
            uint64_t x = (uint64_t)rand_r(&seed) << 33 ^ (uint64_t)rand_r(&seed);
            uint64_t y = (uint64_t)rand_r(&seed) << 33 ^ (uint64_t)rand_r(&seed);
            if (wp_op_apply(&op, t, x, y) != wp_op_apply(&again, t, x, y)) bad++;
        }
        if (wp_op_cxx(&op, t, tn, sizeof tn, def, sizeof def) ||
            (op.kind == WP_OP_EXPR && !cxx_is_clean(def, why, sizeof why)))
            bad++;
        wp_op_free(&again);
        wp_op_free(&op);
    }
    CHECKF(bad == 0, "%d random inputs misbehaved", bad);
    CHECKF(parsed > 1000, "only %d random inputs parsed", parsed);
}

int main(void) {
    test_rejects();
    test_limits();
    test_canonical();
    test_eval();
    test_builtins();
    test_cxx();
    test_copy();
    test_random();
    return t_done("test_expr");
}
