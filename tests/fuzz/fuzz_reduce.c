/* fuzz_reduce.c — POST /v1/reduce and /v1/scan through their handlers (server/api/api_reduce.c) on the
 * emulator: an input that starts with 's' is the body of a scan (the rest of it), any other the body of
 * a reduce. The handler reads the body (the fast "data" reader, then cJSON), the family and spec, the
 * options, the input (data list, data_b64, generate up to FZ_MAX_ELEMENTS), offsets and output form,
 * and runs the job; first as on the HTTP thread (may_defer), then, when it deferred, as on a worker,
 * unless the body asks to "compile" (that would run NVRTC per input). Buffers an "output":"buffer"
 * made are dropped. Every answer is 2xx or 4xx with JSON (fuzz_app.h). */
#include "fuzz_app.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_app_open(NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bool scan = size && data[0] == 's';
    if (scan) data++, size--;
    fz_try_inline(scan ? "POST /v1/scan" : "POST /v1/reduce", scan ? wp_api_scan : wp_api_reduce,
                  scan ? "/v1/scan" : "/v1/reduce", data, size, !fz_asks_compile(data, size));
    fz_drop_buffers();
    return 0;
}
