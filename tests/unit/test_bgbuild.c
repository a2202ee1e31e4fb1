/* test_bgbuild.c — server/engine/bgbuild.c over the real compiler and a memory cache, on the emulator: an
 * asked kernel ends up in the memory cache (wp_app_kernel_memory finds it), once however often it
 * is asked; a repeat while it is queued or building is not a second build; asks of weight 1 (a job
 * alone) queue it only once they weigh WP_BGBUILD_THRESHOLD; a spec that fails to build is counted
 * as failed and asks for it are refused for WP_BGBUILD_RETRY_S (no second build); asks past WP_BGBUILD_QUEUE_MAX are
 * dropped, not queued; closing with asks queued frees them (ASan) and never waits for more than the one building. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "engine/app.h"
#include "engine/bgbuild.h"
#include "t.h"

static wp_app app;

static void spec_of(const char *json, wp_spec *s) {
    cJSON *o = cJSON_Parse(json);
    wp_err err = {0};
    int rc = wp_spec_from_json(o, app.arch, s, &err);
    if (rc) fprintf(stderr, "spec %s: %s\n", json, err.msg);
    CHECK(rc == 0);
    cJSON_Delete(o);
}

/* Waits (up to a minute: NVRTC on a loaded machine) until nothing is queued or building. */
static void drain(wp_bgbuild *bg, wp_bgbuild_stats *st) {
    for (int i = 0; i < 6000; i++) {
        wp_bgbuild_stats_get(bg, st);
        if (st->queued == 0) return;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
}

static bool in_memory(const wp_spec *s) {
    wp_ready_kernel rk;
    wp_err err = {0};
    int rc = wp_app_kernel_memory(&app, s, app.emu, &rk, &err);
    if (rc == 0) wp_app_kernel_put(&app, &rk);
    return rc == 0;
}

static void test_build_once(void) {
    T_CASE("an asked kernel is built once and found in memory");
    wp_spec s;
    spec_of("{\"family\":\"shfl_xor\",\"type\":\"i32\",\"width\":32,\"lane_mask\":1}", &s);
    CHECK(!in_memory(&s));
    wp_bgbuild *bg = wp_bgbuild_open(&app);
    CHECK(bg != NULL);
    for (int i = 0; i < 20; i++)
        CHECK(wp_bgbuild_want(bg, &s, app.emu, WP_BGBUILD_THRESHOLD)); /* repeats while queued or building */
    wp_bgbuild_stats st;
    drain(bg, &st);
    CHECKF(st.queued == 0 && st.built == 1 && st.failed == 0 && st.dropped == 0,
           "queued %d built %llu failed %llu dropped %llu", st.queued, (unsigned long long)st.built,
           (unsigned long long)st.failed, (unsigned long long)st.dropped);
    CHECKF(st.asked >= 1 && st.asked <= 20, "asked %llu", (unsigned long long)st.asked);
    CHECK(in_memory(&s));
    uint64_t hits_before = st.built;
    CHECK(wp_bgbuild_want(bg, &s, app.emu,
                          WP_BGBUILD_THRESHOLD)); /* built already: asked again, a memory hit, no compile */
    drain(bg, &st);
    CHECK(st.built == hits_before + 1 && st.failed == 0);
    wp_bgbuild_close(bg);
    wp_spec_free(&s);
}

static void test_weight(void) {
    T_CASE("asks of weight 1 queue a build once they weigh the threshold");
    wp_spec s;
    spec_of("{\"family\":\"vote_any\",\"type\":\"i32\",\"width\":8}", &s);
    wp_bgbuild *bg = wp_bgbuild_open(&app);
    wp_bgbuild_stats st;
    for (int i = 1; i < WP_BGBUILD_THRESHOLD; i++) CHECK(!wp_bgbuild_want(bg, &s, app.emu, 1));
    wp_bgbuild_stats_get(bg, &st);
    CHECK(st.asked == 0 && st.queued == 0 && !in_memory(&s));
    CHECK(wp_bgbuild_want(bg, &s, app.emu, 1)); /* the threshold-th */
    drain(bg, &st);
    CHECK(st.asked == 1 && st.built == 1 && in_memory(&s));
    wp_bgbuild_close(bg);
    wp_spec_free(&s);
}

static void test_failure_and_drop(void) {
    T_CASE("a failing build is counted; past the queue's room asks are dropped; close frees the rest");
    /* a jit over a templates directory with the ABI header and no template: every build fails, fast */
    wp_jit *good = app.jit;
    char dir[] = "/tmp/wp_test_bgbuild_XXXXXX", abi[600], cmd[1400];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(abi, sizeof abi, "%s/wp_abi.h", dir);
    snprintf(cmd, sizeof cmd, "cp %s/../kernels/wp_abi.h %s", WP_DEFAULT_TEMPLATES, abi);
    CHECK(system(cmd) == 0);
    char cuda_include[600];
    snprintf(cuda_include, sizeof cuda_include, "%s/include", WP_DEFAULT_CUDA_HOME);
    wp_err err = {0};
    wp_jit *empty = wp_jit_open(dir, cuda_include, &err);
    CHECKF(empty != NULL, "%s", err.msg);
    if (empty) {
        app.jit = empty;
        wp_bgbuild *bg = wp_bgbuild_open(&app);
        wp_spec s;
        spec_of("{\"family\":\"ballot\",\"type\":\"i32\",\"width\":16}", &s);
        CHECK(wp_bgbuild_want(bg, &s, app.emu, WP_BGBUILD_THRESHOLD));
        wp_bgbuild_stats st;
        drain(bg, &st);
        CHECKF(st.failed == 1 && st.built == 0, "failed %llu built %llu", (unsigned long long)st.failed,
               (unsigned long long)st.built);
        CHECK(!in_memory(&s));
        for (int i = 0; i < 3; i++) CHECK(!wp_bgbuild_want(bg, &s, app.emu, WP_BGBUILD_THRESHOLD)); /* failed lately */
        wp_bgbuild_stats_get(bg, &st);
        CHECK(st.failed == 1 && st.queued == 0 && st.asked == 1);
        wp_bgbuild_close(bg);
        wp_spec_free(&s);
        wp_jit_close(empty);
        app.jit = good;
    }
    unlink(abi);
    rmdir(dir);

    wp_bgbuild *bg = wp_bgbuild_open(&app);
    int taken = 0, refused = 0;
    char json[160];
    for (int i = 0; i < WP_BGBUILD_QUEUE_MAX + 16; i++) { /* distinct keys: lane masks 0..79 at width 32 */
        wp_spec s;
        snprintf(json, sizeof json, "{\"family\":\"shfl_xor\",\"type\":\"u32\",\"width\":32,\"lane_mask\":%d}", i % 32);
        spec_of(json, &s);
        s.width = 32;
        if (i >= 32) { /* more distinct keys: other types */
            snprintf(json, sizeof json, "{\"family\":\"shfl_xor\",\"type\":\"%s\",\"width\":32,\"lane_mask\":%d}",
                     i < 64 ? "f32" : "u64", i % 32);
            wp_spec_free(&s);
            spec_of(json, &s);
        }
        if (wp_bgbuild_want(bg, &s, app.emu, WP_BGBUILD_THRESHOLD))
            taken++;
        else
            refused++;
        wp_spec_free(&s);
    }
    wp_bgbuild_stats st;
    wp_bgbuild_stats_get(bg, &st);
    /* the thread may finish a few while asks arrive, so at least the room is taken and the rest refused
     * only for want of room */
    CHECKF(taken >= WP_BGBUILD_QUEUE_MAX && taken + refused == WP_BGBUILD_QUEUE_MAX + 16, "taken %d refused %d", taken,
           refused);
    CHECK(st.dropped == (uint64_t)refused);
    wp_bgbuild_close(bg); /* with asks still queued: freed, not built */
    wp_bgbuild_close(NULL);
    CHECK(!wp_bgbuild_want(NULL, NULL, NULL, 1));
}

int main(void) {
    char cuda_include[600];
    snprintf(cuda_include, sizeof cuda_include, "%s/include", WP_DEFAULT_CUDA_HOME);
    wp_err err = {0};
    app.emu = wp_backend_emu_open();
    app.preferred = app.emu;
    snprintf(app.arch, sizeof app.arch, "sm_90");
    app.jit = wp_jit_open(WP_DEFAULT_TEMPLATES, cuda_include, &err);
    app.cache = wp_cache_open(NULL, 64u << 20, &err);
    T_CASE("open");
    CHECKF(app.jit && app.cache, "%s", err.msg);
    if (!app.jit || !app.cache) return t_done("bgbuild");
    test_build_once();
    test_weight();
    test_failure_and_drop();
    wp_cache_close(app.cache);
    wp_jit_close(app.jit);
    wp_backend_close(app.emu);
    return t_done("bgbuild");
}
