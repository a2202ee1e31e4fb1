/* expr_text.c — an operator written out: its canonical text (wp_op.text, which parses again to the same
 * tree) and the C++ functor for the templates, built only from the helpers of templates/wp_ops.cuh, so
 * client text never reaches NVRTC. Owns: nothing. */
#include "expr_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text: canonical form and C++ ---- */

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

void expr_print_canon(sbuf *b, const wp_expr *e, int id) {
    const node *nd = &e->nodes[id];
    const op_row *row = &expr_op_rows[nd->kind];
    switch (nd->kind) {
    case N_A:
        sb_printf(b, e->map ? "x" : "a");
        return;
    case N_B:
        sb_printf(b, e->map ? "y" : "b");
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
        expr_print_canon(b, e, nd->kid[0]);
        sb_printf(b, ")");
        return;
    case N_ABS:
    case N_MIN:
    case N_MAX:
        sb_printf(b, "%s(", row->tok);
        expr_print_canon(b, e, nd->kid[0]);
        if (row->arity == 2) {
            sb_printf(b, ", ");
            expr_print_canon(b, e, nd->kid[1]);
        }
        sb_printf(b, ")");
        return;
    case N_SEL:
        sb_printf(b, "(");
        expr_print_canon(b, e, nd->kid[0]);
        sb_printf(b, " ? ");
        expr_print_canon(b, e, nd->kid[1]);
        sb_printf(b, " : ");
        expr_print_canon(b, e, nd->kid[2]);
        sb_printf(b, ")");
        return;
    default:
        sb_printf(b, "(");
        expr_print_canon(b, e, nd->kid[0]);
        sb_printf(b, " %s ", row->tok);
        expr_print_canon(b, e, nd->kid[1]);
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
    const op_row *row = &expr_op_rows[nd->kind];
    sb_printf(b, "%s(", row->helper);
    for (int i = 0; i < row->arity; i++) {
        if (i) sb_printf(b, ", ");
        print_cxx(b, e, nd->kid[i]);
    }
    sb_printf(b, ")");
}

int wp_op_cxx(const wp_op *op, wp_type t, char *type_name, size_t tn, char *definition, size_t dn) {
    if (!type_name || !definition || tn == 0 || dn == 0) return -1;
    if ((unsigned)op->kind >= WP_OP_COUNT || (unsigned)t >= WP_TYPE_COUNT) return -1;
    sbuf name = {type_name, tn, 0, false}, def = {definition, dn, 0, false};
    definition[0] = 0;
    if (op->kind != WP_OP_EXPR) {
        sb_printf(&name, "%s<%s>", expr_builtin_rows[op->kind].functor, wp_type_cxx(t));
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

static bool reads_b(const wp_expr *e, int id) {
    const node *nd = &e->nodes[id];
    if (nd->kind == N_B) return true;
    for (int i = 0; i < 3; i++)
        if (nd->kid[i] >= 0 && reads_b(e, nd->kid[i])) return true;
    return false;
}

bool wp_map_uses_y(const wp_op *map) { return map && map->expr && reads_b(map->expr, map->expr->root); }

/* A map's functor: wp_map_expr::operator()(x, y) in the element type T (computed in wp_calc<T>, rounded
 * once), y ignored unless the map reads it; uses_y says whether the kernel loads a second input. */
int wp_map_cxx(const wp_op *map, char *definition, size_t dn) {
    if (!definition || dn == 0 || !map || map->kind != WP_OP_EXPR || !map->expr) return -1;
    sbuf def = {definition, dn, 0, false};
    definition[0] = 0;
    sb_printf(&def,
              "struct wp_map_expr {\n"
              "    static constexpr bool uses_y = %s;\n"
              "    template <typename T> __device__ T operator()(T a_, T b_) const {\n"
              "        typedef typename wp_calc<T>::type C;\n"
              "        const C a = wp_to_calc(a_), b = wp_to_calc(b_);\n"
              "        (void)a;\n"
              "        (void)b;\n"
              "        return wp_from_calc<T>(",
              wp_map_uses_y(map) ? "true" : "false");
    print_cxx(&def, map->expr, map->expr->root);
    sb_printf(&def, ");\n    }\n};\n");
    return def.overflow ? -1 : 0;
}
