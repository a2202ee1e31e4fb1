/* jit_sweep.c — the rest of test_jit's sweep: every family × allowed type × two widths × operator
 * beyond the quick set that test_jit compiles (jit_sweep.h), through NVRTC, built in the plain tree.
 * These compiles check the templates, not the C around them (test_jit runs that sanitized over the
 * quick set), and NVRTC under ASan's allocator takes twice the CPU time. make test runs it; make check
 * does not (test_jit's quick set is that tier's sweep). Needs NVRTC, not a GPU. */
#include "jit_sweep.h"

int main(void) {
    char cuda_include[512];
    snprintf(cuda_include, sizeof cuda_include, "%s/include", WP_DEFAULT_CUDA_HOME);
    wp_err err = {0};
    wp_jit *jit = wp_jit_open(WP_DEFAULT_TEMPLATES, cuda_include, &err);
    T_CASE("open");
    CHECKF(jit != NULL, "%s", err.msg);
    if (!jit) return t_done("jit_sweep");
    static wp_spec specs[MAX_SPECS];
    static bool quick[MAX_SPECS];
    int n = sweep_collect(specs, quick, false);
    sweep_run(jit, specs, quick, n, false);
    for (int i = 0; i < n; i++) wp_spec_free(&specs[i]);
    wp_jit_close(jit);
    return t_done("jit_sweep");
}
