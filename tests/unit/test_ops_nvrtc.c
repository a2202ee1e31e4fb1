/* test_ops_nvrtc.c — templates/wp_ops.cuh through NVRTC, as the daemon compiles it (no GPU needed):
 * every builtin functor on every type, and expression functors exactly as kernels/expr.c emits them,
 * instantiated by name expression; once with WP_NEED_FP16 and once without (the 16-bit types must
 * then not be needed). tests/unit/ops_compile_check.cu is the same check for nvcc. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>

#include "compile/jit.h" /* WP_DEFAULT_CUDA_HOME */
#include "kernels/expr.h"
#include "t.h"
#include "util/common.h"

#define SRC_MAX 65536
#define NAMES_MAX 128

/* Expressions whose functors go in the program: one with every integer helper, one with every
 * helper floats allow, and one with a float literal. */
static const struct {
    const char *ns, *text;
    wp_type parse_as;
} exprs[] = {
    {"e_int",
     "a < b ? min(a, b) : max(abs(-a), ~b) + (a*b - a/b) % 3 ^ (a << 2 | b >> 1) & (a <= b) + (a>=b) - "
     "(a>b) * (a==b) + (a != b) + 0x10",
     WP_I64},
    {"e_any", "a < b ? min(a, b) : max(abs(-a), b) + (a*b - a/b) * 3 - (a <= b) + (a>=b) - (a>b) * (a==b) + (a != b)",
     WP_F32},
    {"e_flt", "a * 0.1 + b / 3e-5 - 1e-320", WP_F64},
};

typedef struct {
    char text[SRC_MAX];
    size_t len;
    const char *names[NAMES_MAX];
    char name_store[NAMES_MAX][96];
    int n_names;
} program;

static void add_src(program *p, const char *s) {
    size_t n = strlen(s);
    if (p->len + n < sizeof p->text) memcpy(p->text + p->len, s, n + 1), p->len += n;
}

static void add_name(program *p, const char *type, const char *op) {
    if (p->n_names >= NAMES_MAX) return;
    snprintf(p->name_store[p->n_names], sizeof p->name_store[0], "apply<%s, %s >", type, op);
    p->names[p->n_names] = p->name_store[p->n_names];
    p->n_names++;
}

/* Builds the program text and the list of instantiations for the types in `types`. */
static int build_program(program *p, unsigned types) {
    memset(p, 0, sizeof *p);
    add_src(p, "#include \"wp_ops.cuh\"\n");
    for (size_t i = 0; i < WP_ARRAY_LEN(exprs); i++) {
        wp_op op;
        wp_err err = {0};
        char tn[64], def[8192];
        if (wp_op_parse(exprs[i].text, exprs[i].parse_as, "op", &op, &err)) return fprintf(stderr, "%s\n", err.msg), -1;
        if (wp_op_cxx(&op, exprs[i].parse_as, tn, sizeof tn, def, sizeof def)) return -1;
        add_src(p, "namespace ");
        add_src(p, exprs[i].ns);
        add_src(p, " {\n");
        add_src(p, def);
        add_src(p, "}\n");
        wp_op_free(&op);
    }
    add_src(p, "template <typename T, class Op> __global__ void apply(const T *a, const T *b, T *out) {\n"
               "    out[threadIdx.x] = Op()(a[threadIdx.x], b[threadIdx.x]);\n}\n");
    for (int t = 0; t < WP_TYPE_COUNT; t++) {
        if (!(types & WP_TBIT(t))) continue;
        for (int k = 0; k < WP_OP_EXPR; k++) {
            wp_op op;
            wp_err err = {0};
            char tn[64], def[16];
            if (wp_op_parse((const char *[]){"sum", "prod", "min", "max", "and", "or", "xor"}[k], (wp_type)t, "op", &op,
                            &err))
                continue; /* and/or/xor on floats */
            if (wp_op_cxx(&op, (wp_type)t, tn, sizeof tn, def, sizeof def)) return -1;
            add_name(p, wp_type_cxx((wp_type)t), tn);
        }
        for (size_t i = 0; i < WP_ARRAY_LEN(exprs); i++) {
            wp_op op;
            wp_err err = {0};
            if (wp_op_parse(exprs[i].text, (wp_type)t, "op", &op, &err)) continue; /* not for this type */
            char ns_op[64];
            snprintf(ns_op, sizeof ns_op, "%s::wp_op_expr", exprs[i].ns);
            add_name(p, wp_type_cxx((wp_type)t), ns_op);
            wp_op_free(&op);
        }
    }
    return p->len < sizeof p->text - 1 ? 0 : -1;
}

static void compile_case(const char *label, unsigned types, bool fp16) {
    T_CASE(label);
    static program prog;
    CHECK(build_program(&prog, types) == 0);
    size_t hlen;
    char *header = wp_read_file(WP_DEFAULT_TEMPLATES "/wp_ops.cuh", &hlen);
    CHECKF(header != NULL, "cannot read %s/wp_ops.cuh", WP_DEFAULT_TEMPLATES);
    if (!header) return;
    const char *headers[] = {header}, *header_names[] = {"wp_ops.cuh"};
    nvrtcProgram p;
    CHECK(nvrtcCreateProgram(&p, prog.text, "ops_check.cu", 1, headers, header_names) == NVRTC_SUCCESS);
    for (int i = 0; i < prog.n_names; i++) CHECK(nvrtcAddNameExpression(p, prog.names[i]) == NVRTC_SUCCESS);
    const char *opts[] = {"-std=c++17", "--fmad=false", "-arch=sm_90", "-I" WP_DEFAULT_CUDA_HOME "/include",
                          "-DWP_NEED_FP16"};
    nvrtcResult rc = nvrtcCompileProgram(p, fp16 ? 5 : 4, opts);
    size_t log_len = 0;
    nvrtcGetProgramLogSize(p, &log_len);
    char *log = calloc(1, log_len + 1);
    if (log) nvrtcGetProgramLog(p, log);
    CHECKF(rc == NVRTC_SUCCESS, "%s\n%s", nvrtcGetErrorString(rc), log ? log : "");
    if (rc == NVRTC_SUCCESS) {
        for (int i = 0; i < prog.n_names; i++) {
            const char *lowered = NULL;
            CHECKF(nvrtcGetLoweredName(p, prog.names[i], &lowered) == NVRTC_SUCCESS && lowered, "%s", prog.names[i]);
        }
        size_t cubin = 0;
        CHECK(nvrtcGetCUBINSize(p, &cubin) == NVRTC_SUCCESS && cubin > 0);
    }
    CHECKF(prog.n_names >= (fp16 ? 60 : 44), "%d instantiations", prog.n_names);
    free(log);
    nvrtcDestroyProgram(&p);
    free(header);
}

int main(void) {
    compile_case("all types, WP_NEED_FP16", WP_T_ALL, true);
    compile_case("no 16-bit types, no WP_NEED_FP16", WP_T_ALL & ~(WP_TBIT(WP_F16) | WP_TBIT(WP_BF16)), false);
    return t_done("test_ops_nvrtc");
}
