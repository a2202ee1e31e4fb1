/* expr.h — binary operators: the fixed list (sum prod min max and or xor) and the small expression
 * grammar over `a` and `b` of DESIGN.md §3. A parsed operator is evaluated on the host (the emulator)
 * and re-emitted as a C++ functor for the templates; the client's text never reaches NVRTC.
 *
 * Arithmetic rules, identical on host and device so results match bit for bit:
 *  - integers: + - * wrap (two's complement); / and % by zero give 0, INT_MIN / -1 gives INT_MIN
 *    (and % gives 0); shifts use the count modulo the type's bit width; >> is arithmetic on signed types.
 *  - f32/f64: IEEE, no contraction (kernels compile with --fmad=false). % is not allowed on floats.
 *  - f16/bf16: every operator evaluates in f32 and rounds to the type once at the end.
 *  - min/max on floats follow fminf/fmaxf: a NaN operand is ignored unless both are NaN;
 *    between +0 and -0 the first operand wins.
 *  - comparisons give 1 or 0 in the type; `c ? x : y` tests c != 0.
 */
#ifndef WP_EXPR_H
#define WP_EXPR_H

#include "types.h"
#include "util/common.h"

typedef enum {
    WP_OP_SUM,
    WP_OP_PROD,
    WP_OP_MIN,
    WP_OP_MAX,
    WP_OP_AND,
    WP_OP_OR,
    WP_OP_XOR,
    WP_OP_EXPR,
    WP_OP_COUNT
} wp_op_kind;
#define WP_OPBIT(k) (1u << (k))
#define WP_OPS_ALL 0xffu /* builtins and expressions */
#define WP_OPS_BUILTIN 0x7fu

#define WP_EXPR_MAX_LEN 256

typedef struct wp_expr wp_expr; /* opaque parse tree */

typedef struct {
    wp_op_kind kind;
    wp_expr *expr;                  /* WP_OP_EXPR only; owned */
    char text[WP_EXPR_MAX_LEN * 2]; /* canonical text: "sum" or the re-printed expression */
} wp_op;

/* Parses `s` (a builtin name or an expression) for type t. On error: 400 "bad_op" naming `field`,
 * the message giving the 0-based position of the offending character. */
int wp_op_parse(const char *s, wp_type t, const char *field, wp_op *out, wp_err *err);
void wp_op_free(wp_op *op);
int wp_op_copy(wp_op *dst, const wp_op *src); /* deep copy; 0 or -1 (ENOMEM) */

/* a op b on raw bits of type t. */
uint64_t wp_op_apply(const wp_op *op, wp_type t, uint64_t a, uint64_t b);
/* The identity element of a builtin op for type t (sum 0, prod 1, min +max/+inf, and all-ones...).
 * Expressions have none: returns false. */
bool wp_op_identity(const wp_op *op, wp_type t, uint64_t *out);

/* Writes the C++ functor type name used in a template instantiation, e.g. "wp_op_max<float>" or
 * "wp_op_expr" — and, for expressions, the functor's definition to prepend to the NVRTC source
 * (empty string for builtins). Returns 0, or -1 when a buffer is too small. */
int wp_op_cxx(const wp_op *op, wp_type t, char *type_name, size_t tn, char *definition, size_t dn);

/* ---- maps (transform-reduce): an expression over x (and y, an element of a second input) applied to
 * each element before the operator. The same grammar and arithmetic as an operator's, in the element
 * type; parsed and re-emitted by us like an operator. ---- */

/* Parses a map for type t: variables x and, when has_y, y; no builtin names. Errors: 400 "bad_map"
 * naming `field`. out->kind is WP_OP_EXPR, out->text its canonical text ("(x * x)"); free with wp_op_free.
 * Evaluate it with wp_op_apply(map, t, x, y). */
int wp_map_parse(const char *s, wp_type t, bool has_y, const char *field, wp_op *out, wp_err *err);
bool wp_map_uses_y(const wp_op *map); /* whether the map reads y */
/* The functor struct wp_map_expr (operator()(x, y) and uses_y) for the templates; 0, or -1 when dn is too small. */
int wp_map_cxx(const wp_op *map, char *definition, size_t dn);

#endif
