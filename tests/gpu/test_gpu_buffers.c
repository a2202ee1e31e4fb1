/* test_gpu_buffers.c — server/engine/buffers.c on the cuda backend: a 64 MiB buffer in device memory
 * (no host view), written and read back bit for bit at offsets, the quota charged and given back,
 * a buffer deleted while held stays readable until released, and device memory really returns
 * after the last release. Without a CUDA device it says SKIPPED and passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/t.h"
#include "backend/backend.h"
#include "engine/buffers.h"

#define N_ELEMS (16u << 20) /* f32: 64 MiB */
#define MIB (1ull << 20)

static uint64_t free_mem(wp_backend *b) {
    wp_device_info di;
    wp_backend_info(b, &di);
    return di.mem_free;
}

int main(void) {
    wp_err err = {0};
    wp_backend *cuda = wp_backend_cuda_open(0, &err);
    if (!cuda) {
        printf("SKIPPED: no CUDA device (%s)\n", err.msg);
        return t_done("gpu_buffers");
    }
    T_CASE("device buffers");
    wp_buffers_config cfg = {.quota = (uint64_t)N_ELEMS * 4 + MIB, .ttl_s = 60, .max_ttl_s = 600};
    wp_buffers *bs = wp_buffers_open(&cfg, &err);
    CHECK(bs != NULL);
    if (!bs) return t_done("gpu_buffers");

    uint64_t free_before = free_mem(cuda);
    float *host = malloc((size_t)N_ELEMS * sizeof *host), *back = malloc((size_t)N_ELEMS * sizeof *back);
    for (uint32_t i = 0; i < N_ELEMS; i++) host[i] = (float)i * 0.5f - 7.0f;
    wp_buf *b = wp_buffers_create(bs, NULL, cuda, WP_F32, N_ELEMS, &err);
    CHECKF(b != NULL, "%s", err.msg);
    if (!b) return t_done("gpu_buffers");
    CHECK(wp_buf_host(b) == NULL && wp_buf_addr(b) != 0 && wp_buf_size(b) == (size_t)N_ELEMS * 4);
    CHECK(!strcmp(wp_backend_name(wp_buf_backend(b)), "cuda"));
    /* Two halves at offsets, as chunked uploads do. */
    size_t half = (size_t)N_ELEMS * 2;
    CHECK(wp_buf_write(b, 0, host, half, &err) == 0);
    CHECK(wp_buf_write(b, half, (char *)host + half, half, &err) == 0);
    wp_buffer_info info;
    CHECKF(wp_buffers_commit(bs, b, 0, &info, &err) == 0, "%s", err.msg);
    CHECK(info.count == N_ELEMS && !strcmp(info.backend, "cuda"));
    CHECKF(free_mem(cuda) + 32 * MIB <= free_before, "device memory did not go down: %llu -> %llu",
           (unsigned long long)free_before, (unsigned long long)free_mem(cuda));

    /* Over the quota: refused before any allocation. */
    CHECK(!wp_buffers_create(bs, NULL, cuda, WP_F32, 1u << 20, &err) && err.status == 507);

    /* Held, deleted, still readable; freed by the release. */
    wp_buf *held = wp_buffers_get(bs, NULL, info.id, NULL, &err);
    CHECK(held == b);
    CHECK(wp_buffers_delete(bs, NULL, info.id, NULL, &err) == 0);
    memset(back, 0, (size_t)N_ELEMS * sizeof *back);
    CHECK(wp_buf_read(held, 0, back, (size_t)N_ELEMS * 4, &err) == 0);
    CHECK(memcmp(host, back, (size_t)N_ELEMS * 4) == 0);
    float one = 0;
    CHECK(wp_buf_read(held, (size_t)12345 * 4, &one, 4, &err) == 0 && one == host[12345]);
    wp_buffers_release(bs, held);
    wp_buffers_stats st;
    wp_buffers_stats_get(bs, &st);
    CHECK(st.bytes == 0 && st.buffers == 0);
    CHECKF(free_mem(cuda) + 8 * MIB >= free_before, "device memory did not come back: %llu -> %llu",
           (unsigned long long)free_before, (unsigned long long)free_mem(cuda));

    free(host);
    free(back);
    wp_buffers_close(bs);
    wp_backend_close(cuda);
    return t_done("gpu_buffers");
}
