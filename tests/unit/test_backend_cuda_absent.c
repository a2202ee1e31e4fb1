/* test_backend_cuda_absent.c — wp_backend_cuda_open on whatever machine runs it. Without a GPU (CI):
 * it fails cleanly, with a message naming what is missing and nothing leaked (ASan). With one: it opens
 * and reports sane device facts. Either way a device ordinal that does not exist is refused. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "t.h"

/* With a GPU, the driver's cuInit keeps a few allocations for the life of the process: not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libcuda.so\n"; }

static bool names_missing_piece(const char *msg) {
    return strstr(msg, "libcuda.so.1") || strstr(msg, "cuInit") || strstr(msg, "device") || strstr(msg, "driver");
}

int main(void) {
    wp_err err = {0};
    T_CASE("open ordinal 0");
    wp_backend *b = wp_backend_cuda_open(0, &err);
    if (!b) {
        printf("no CUDA backend here (expected without a GPU): %s\n", err.msg);
        CHECK(err.status == 503);
        CHECK(err.code && strcmp(err.code, "cuda_unavailable") == 0);
        CHECKF(err.msg[0] && names_missing_piece(err.msg), "message: \"%s\"", err.msg);

        T_CASE("open twice fails the same way");
        wp_err again = {0};
        CHECK(wp_backend_cuda_open(0, &again) == NULL);
        CHECK(strcmp(again.msg, err.msg) == 0);

        T_CASE("a NULL err is allowed");
        CHECK(wp_backend_cuda_open(0, NULL) == NULL);
    } else {
        wp_device_info info;
        memset(&info, 0, sizeof info);
        wp_backend_info(b, &info);
        printf("GPU present, checking the open backend instead: %s, sm_%d, %d SMs, %.1f/%.1f GiB free, driver %d\n",
               info.name, info.sm, info.sms, (double)info.mem_free / (1 << 30), (double)info.mem_total / (1 << 30),
               info.driver_version);
        CHECK(strcmp(wp_backend_name(b), "cuda") == 0);
        CHECK(info.backend && strcmp(info.backend, "cuda") == 0);
        CHECK(info.name[0] != 0);
        CHECK(info.sm >= 50 && info.sm < 200);
        CHECK(info.sms > 0);
        CHECK(info.mem_total > 0 && info.mem_free > 0 && info.mem_free <= info.mem_total);
        CHECK(info.driver_version >= 13000);
        wp_backend_close(b);
    }

    T_CASE("a device that does not exist");
    wp_err bad = {0};
    CHECK(wp_backend_cuda_open(9999, &bad) == NULL);
    CHECKF(bad.status == 503 && bad.msg[0], "status %d, message \"%s\"", bad.status, bad.msg);
    return t_done("cuda_absent");
}
