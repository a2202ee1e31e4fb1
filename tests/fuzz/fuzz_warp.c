/* fuzz_warp.c — POST /v1/warp through its handler (server/api/api_warp.c) on the emulator: any bytes as the
 * body. The handler parses the body (depth limit, cJSON), the spec, the lanes' input, active lanes and
 * arguments, and runs the emulator for a kernel in the memory cache or a family that needs none
 * (ds_permute, ds_bpermute); any other spec is "deferred" (it would compile: not per input). The
 * kernels of WARM are compiled at start (or read from WARPD_FUZZ_CACHE), so mutations of their
 * input, lanes and arguments run all the way. Every answer is 2xx or 4xx with JSON (fuzz_app.h). */
#include "fuzz_app.h"

static const char *const WARM[] = {
    "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"width\":16,\"args\":{\"lane_mask\":1},\"input\":{\"iota\":32}}",
    "{\"family\":\"shfl\",\"args\":{\"src_lane\":0},\"input\":{\"iota\":32}}",
    "{\"family\":\"shfl_down\",\"type\":\"f64\",\"args\":{\"delta\":1},\"input\":{\"iota\":32}}",
    "{\"family\":\"vote_any\",\"input\":[0,1]}",
    "{\"family\":\"ballot\",\"input\":[0,1,1]}",
    "{\"family\":\"match_any\",\"type\":\"i32\",\"input\":[1,2,1]}",
    "{\"family\":\"warp_allreduce\",\"type\":\"f32\",\"op\":\"sum\",\"input\":{\"iota\":32}}",
    "{\"family\":\"redux\",\"type\":\"u32\",\"op\":\"max\",\"input\":{\"iota\":32}}",
    NULL,
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_app_open(NULL);
    fz_app_warm(WARM);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_try_inline("POST /v1/warp", wp_api_warp, "/v1/warp", data, size, false);
    return 0;
}
