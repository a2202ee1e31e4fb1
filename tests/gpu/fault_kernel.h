/* fault_kernel.h — a kernel that poisons its context (a sticky error), for the GPU tests of recovery
 * (test_gpu_recover.c, test_gpu_streams.c): it takes the warp launch's parameter block and writes
 * through a null pointer. Compiled with NVRTC directly, never through the cache. */
#ifndef WP_TEST_FAULT_KERNEL_H
#define WP_TEST_FAULT_KERNEL_H
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/jit.h"

static const char faulting_source[] = "struct params { unsigned long long w[7]; int i[6]; };\n"
                                      "extern \"C\" __global__ void wp_fault(params p) {\n"
                                      "    *(volatile int *)(p.w[0] * 0 + 16) = 1;\n"
                                      "}\n";

/* The faulting kernel's cubin for arch ("sm_90") in a (lowered name "wp_fault"); 0, or -1. */
static inline int compile_faulting(const char *arch, wp_artifact *a) {
    memset(a, 0, sizeof *a);
    nvrtcProgram prog;
    char opt[32];
    snprintf(opt, sizeof opt, "-arch=%s", arch);
    const char *opts[] = {opt};
    if (nvrtcCreateProgram(&prog, faulting_source, "fault.cu", 0, NULL, NULL) != NVRTC_SUCCESS) return -1;
    int rc = -1;
    if (nvrtcCompileProgram(prog, 1, opts) == NVRTC_SUCCESS &&
        nvrtcGetCUBINSize(prog, &a->cubin_len) == NVRTC_SUCCESS && (a->cubin = malloc(a->cubin_len)) &&
        nvrtcGetCUBIN(prog, (char *)a->cubin) == NVRTC_SUCCESS) {
        a->lowered = strdup("wp_fault");
        rc = 0;
    }
    nvrtcDestroyProgram(&prog);
    return rc;
}
#endif
