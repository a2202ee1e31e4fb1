/* test_warp_grid.c — server/backend/warp_grid.c: the /v1/warp device layout (parts in order, 256-byte aligned,
 * the download covering out | src), one job's image (as backend_cuda.c uploads it alone) and a batch's
 * (each job from its first lane, its last warp's spare lanes inactive with zero inputs, out poisoned
 * and src -1 everywhere), and the launch parameters over a base address. */
#include <stdlib.h>
#include <string.h>

#include "backend/warp_grid.h"
#include "t.h"

static void test_layout(void) {
    T_CASE("layout");
    wp_warp_layout l = wp_warp_layout_for(40, 3);
    CHECK(l.out == 0 && l.src == 1024 && l.download == 1024 + 160); /* 40*3*8 = 960 -> 1024; src 40*4 */
    CHECK(l.in == 1280 && l.arg == 1280 + 1024 && l.active == l.arg + 256 && l.total == l.active + 256);
    CHECK(l.in % 256 == 0 && l.arg % 256 == 0 && l.active % 256 == 0 && l.total % 256 == 0);
}

static void test_images(void) {
    T_CASE("one job alone, then two jobs side by side");
    uint64_t in_a[3] = {7, 8, 9};
    int32_t arg_a[3] = {1, 2, 3};
    unsigned char act_b[2] = {1, 0};
    wp_warp_job a = {.n = 3, .elems = 1, .in = in_a, .arg = arg_a}, b = {.n = 2, .elems = 1, .active = act_b};
    wp_warp_layout l = wp_warp_layout_for(3, 1);
    unsigned char *h = malloc(l.total);
    memset(h, 0x5a, l.total);
    wp_warp_image_put(h, &l, &a, 0, 3);
    const uint64_t *out = (const uint64_t *)(h + l.out), *in = (const uint64_t *)(h + l.in);
    const int32_t *src = (const int32_t *)(h + l.src), *arg = (const int32_t *)(h + l.arg);
    for (int i = 0; i < 3; i++)
        CHECK(out[i] == WP_WARP_POISON && src[i] == -1 && in[i] == in_a[i] && arg[i] == arg_a[i] &&
              h[l.active + i] == 1);
    free(h);

    l = wp_warp_layout_for(64, 1); /* a: lanes 0..31 (3 used), b: lanes 32..63 (2 used) */
    h = malloc(l.total);
    memset(h, 0x5a, l.total);
    wp_warp_image_put(h, &l, &a, 0, 32);
    wp_warp_image_put(h, &l, &b, 32, 32);
    out = (const uint64_t *)(h + l.out), in = (const uint64_t *)(h + l.in);
    src = (const int32_t *)(h + l.src), arg = (const int32_t *)(h + l.arg);
    int bad = 0;
    for (int i = 0; i < 64; i++) {
        bool used_a = i < 3, used_b = i >= 32 && i < 34;
        uint64_t want_in = used_a ? in_a[i] : 0;
        int32_t want_arg = used_a ? arg_a[i] : 0;
        unsigned char want_act = used_a ? 1 : used_b ? act_b[i - 32] : 0;
        bad += !(out[i] == WP_WARP_POISON && src[i] == -1 && in[i] == want_in && arg[i] == want_arg &&
                 h[l.active + i] == want_act);
    }
    CHECKF(bad == 0, "%d lanes wrong", bad);

    T_CASE("parameters");
    wp_warp_job s = {.n = 5, .elems = 2, .pred_kind = 3, .pred_a = 11, .pred_b = 12, .first = 1, .second = 0};
    wp_warp_params p = wp_warp_params_at(0x10000, &l, &s, 64);
    CHECK(p.out == 0x10000 + l.out && p.src == 0x10000 + l.src && p.in == 0x10000 + l.in && p.arg == 0x10000 + l.arg &&
          p.active == 0x10000 + l.active);
    CHECK(p.n == 64 && p.elems == 2 && p.pred_kind == 3 && p.pred_a == 11 && p.pred_b == 12 && p.first == 1 &&
          p.second == 0);
    free(h);
}

int main(void) {
    test_layout();
    test_images();
    return t_done("warp_grid");
}
