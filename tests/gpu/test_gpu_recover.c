/* test_gpu_recover.c — the cuda backend after a sticky error. A kernel that writes to an illegal
 * address fails its job with 500 "cuda_error" and the context is replaced; a function loaded before
 * (as the cache holds it) then runs again, reloaded lazily, with the right results. Where the driver
 * cannot give a new context in-process, later jobs must fail cleanly with 503 "cuda_unavailable".
 * Without a CUDA device it says SKIPPED and passes. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/t.h"
#include "backend/backend.h"
#include "compile/jit.h"
#include "fault_kernel.h"
#include "kernels/spec.h"

/* Runs shfl_xor(lane_mask 1) over 32 lanes of i32 and checks every lane got its partner's value. */
static int run_xor(wp_backend *b, void *fn, const wp_spec *s, wp_err *err) {
    uint64_t in[32], out[32];
    int32_t arg[32], src[32];
    uint8_t active[32], why[32];
    for (int i = 0; i < 32; i++) {
        in[i] = (uint64_t)(1000 + i);
        arg[i] = 1;
        active[i] = 1;
    }
    wp_warp_job job = {.n = 32, .elems = 1, .in = in, .arg = arg, .active = active};
    wp_warp_result res = {.out = out, .src = src, .why = why};
    if (wp_backend_run_warp(b, fn, s, &job, &res, NULL, err)) return -1;
    int bad = 0;
    for (int i = 0; i < 32; i++) bad += out[i] != (uint64_t)(1000 + (i ^ 1)) || src[i] != (i ^ 1);
    return bad;
}

int main(void) {
    wp_err err = {0};
    wp_backend *cuda = wp_backend_cuda_open(0, &err);
    if (!cuda) {
        printf("SKIPPED: no CUDA device (%s)\n", err.msg);
        printf("gpu_recover: 0 passed, 0 failed\n");
        return 0;
    }
    wp_device_info info;
    wp_backend_info(cuda, &info);
    wp_spec s = {.family = wp_family_find("shfl_xor"), .type = WP_I32, .width = 32, .mask = 0xffffffffu};
    snprintf(s.arch, sizeof s.arch, "sm_%d", info.sm);
    wp_jit *jit = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    wp_artifact good = {0}, bad = {0};
    void *good_fn = NULL, *bad_fn = NULL;

    T_CASE("setup");
    CHECKF(jit && wp_jit_compile(jit, &s, &good, NULL, &err) == 0, "%s", err.msg);
    CHECK(compile_faulting(s.arch, &bad) == 0);
    CHECKF(wp_backend_load(cuda, &good, &good_fn, &err) == 0, "%s", err.msg);
    CHECKF(wp_backend_load(cuda, &bad, &bad_fn, &err) == 0, "%s", err.msg);

    T_CASE("before the fault");
    CHECKF(run_xor(cuda, good_fn, &s, &err) == 0, "%s", err.msg);

    T_CASE("the fault fails its job");
    wp_err fault = {0};
    CHECK(run_xor(cuda, bad_fn, &s, &fault) == -1);
    printf("fault reported as: %d %s: %s\n", fault.status, fault.code ? fault.code : "-", fault.msg);
    CHECK(fault.status == 500 && fault.code && strcmp(fault.code, "cuda_error") == 0);
    CHECK(strstr(fault.msg, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL);

    if (strstr(fault.msg, "context was reset")) {
        T_CASE("a function loaded before the reset runs again");
        for (int i = 0; i < 3; i++) {
            wp_err again = {0};
            CHECKF(run_xor(cuda, good_fn, &s, &again) == 0, "%s", again.msg);
        }
        wp_backend_info(cuda, &info);
        CHECK(info.mem_free > 0);

        T_CASE("a second fault, then recovery again");
        CHECK(run_xor(cuda, bad_fn, &s, &fault) == -1);
        CHECK(strstr(fault.msg, "context was reset") != NULL);
        CHECKF(run_xor(cuda, good_fn, &s, &err) == 0, "%s", err.msg);
    } else {
        /* The CUDA docs allow this: after a sticky error only a new process may use the GPU. */
        printf("NOTE: this driver could not recreate a CUDA context in-process after a sticky error\n");
        T_CASE("a lost device fails cleanly");
        CHECK(strstr(fault.msg, "could not be recreated") != NULL);
        wp_err lost = {0};
        CHECK(run_xor(cuda, good_fn, &s, &lost) == -1);
        CHECKF(lost.status == 503 && lost.code && strcmp(lost.code, "cuda_unavailable") == 0, "%d %s", lost.status,
               lost.msg);
        wp_backend_info(cuda, &info); /* must not crash */
    }

    if (good_fn) wp_backend_unload(cuda, good_fn);
    if (bad_fn) wp_backend_unload(cuda, bad_fn);
    wp_artifact_free(&good);
    wp_artifact_free(&bad);
    wp_jit_close(jit);
    wp_backend_close(cuda);
    return t_done("gpu_recover");
}
