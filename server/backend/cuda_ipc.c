/* cuda_ipc.c — the cuda backend's ways to memory it did not allocate (buffer.h): host pages registered
 * with the driver (a client's shared-memory region, so copies DMA from and to it), and device
 * allocations of other processes opened through CUDA IPC handles. A handle is opened once per device
 * and shared by every buffer over it (refs); the last buffer closes it. The list lives in the backend
 * under load_mu, which is also held across an open so two requests never open one handle twice. */
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

typedef struct cuda_ipc_map {
    struct cuda_ipc_map *next;
    unsigned char handle[64];
    CUdeviceptr base;
    size_t bytes;
    int refs;
    unsigned generation; /* the context it was opened in: a reset closed it already */
} cuda_ipc_map;

int cuda_host_register(wp_backend *be, void *p, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)be;
    cuda_op op;
    if (cuda_op_begin(b, false, &op, err)) return -1;
    CUresult r = b->cu.mem_host_register(p, len, CU_MEMHOSTREGISTER_PORTABLE);
    cuda_op_end(&op);
    return r == CUDA_SUCCESS ? 0 : 1; /* declined (limits, a kernel without support): staged copies */
}

void cuda_host_unregister(wp_backend *be, void *p) {
    cuda_backend *b = (cuda_backend *)be;
    cuda_op op;
    wp_err err;
    if (cuda_op_begin(b, false, &op, &err)) return; /* device lost: the registration went with it */
    b->cu.mem_host_unregister(p);
    cuda_op_end(&op);
}

static cuda_ipc_map *ipc_find(cuda_backend *b, const unsigned char handle[64]) {
    for (cuda_ipc_map *m = b->ipc_maps; m; m = m->next)
        if (m->generation == b->generation && !memcmp(m->handle, handle, 64)) return m;
    return NULL;
}

/* The device the allocation lives on must be this backend's: else a peer mapping would read over the
 * link at a fraction of the speed, and "device" would lie. */
static int ipc_check(cuda_backend *b, CUdeviceptr dptr, cuda_ipc_map *m, wp_err *err) {
    int ordinal = -1;
    CUdeviceptr base = 0;
    size_t bytes = 0;
    if (b->cu.pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr) == CUDA_SUCCESS &&
        ordinal != b->ordinal)
        return WP_FAIL(err, 400, "bad_device", "cuda_ipc.device",
                       "the handle's allocation is on GPU %d, not on device %d (GPU %d)", ordinal, b->base.index,
                       b->ordinal);
    if (b->cu.mem_get_address_range(&base, &bytes, dptr) != CUDA_SUCCESS || base != dptr)
        return WP_FAIL(err, 400, "bad_handle", "cuda_ipc.handle",
                       "the driver gives no size for the handle's allocation");
    m->base = dptr;
    m->bytes = bytes;
    return 0;
}

static cuda_ipc_map *ipc_open_new(cuda_backend *b, const unsigned char handle[64], wp_err *err) {
    cuda_ipc_map *m = calloc(1, sizeof *m);
    if (!m) {
        WP_FAIL(err, 507, "out_of_memory", "", "no host memory for an IPC mapping");
        return NULL;
    }
    cuda_op op;
    if (cuda_op_begin(b, false, &op, err)) return free(m), NULL;
    CUipcMemHandle h;
    memcpy(h.reserved, handle, sizeof h.reserved);
    CUdeviceptr dptr = 0;
    CUresult r = b->cu.ipc_open_mem_handle(&dptr, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != CUDA_SUCCESS) {
        char text[160];
        WP_FAIL(err, 400, "bad_handle", "cuda_ipc.handle", "the driver refuses the handle: %s",
                wp_cu_error_text(&b->cu, r, text, sizeof text));
    } else if (ipc_check(b, dptr, m, err)) {
        b->cu.ipc_close_mem_handle(dptr);
        r = CUDA_ERROR_INVALID_VALUE;
    }
    m->generation = op.gen;
    cuda_op_end(&op);
    if (r != CUDA_SUCCESS) return free(m), NULL;
    memcpy(m->handle, handle, 64);
    return m;
}

int cuda_ipc_open(wp_backend *be, const unsigned char handle[64], uint64_t *base, size_t *bytes, void **ipc,
                  wp_err *err) {
    cuda_backend *b = (cuda_backend *)be;
    pthread_mutex_lock(&b->load_mu);
    cuda_ipc_map *m = ipc_find(b, handle);
    if (!m && (m = ipc_open_new(b, handle, err))) {
        m->next = b->ipc_maps;
        b->ipc_maps = m;
    }
    if (m) m->refs++;
    pthread_mutex_unlock(&b->load_mu);
    if (!m) return -1;
    *base = m->base;
    *bytes = m->bytes;
    *ipc = m;
    return 0;
}

static void ipc_unmap(cuda_backend *b, cuda_ipc_map *m) {
    cuda_op op;
    wp_err err;
    if (m->generation == b->generation && cuda_op_begin(b, false, &op, &err) == 0) {
        if (op.gen == m->generation) b->cu.ipc_close_mem_handle(m->base);
        cuda_op_end(&op);
    }
    free(m);
}

void cuda_ipc_close(wp_backend *be, void *ipc) {
    cuda_backend *b = (cuda_backend *)be;
    cuda_ipc_map *m = ipc, **at;
    pthread_mutex_lock(&b->load_mu);
    bool last = --m->refs == 0;
    if (last)
        for (at = &b->ipc_maps; *at; at = &(*at)->next)
            if (*at == m) {
                *at = m->next;
                break;
            }
    pthread_mutex_unlock(&b->load_mu);
    if (last) ipc_unmap(b, m);
}

void cuda_ipc_close_all(cuda_backend *b) {
    pthread_mutex_lock(&b->load_mu);
    cuda_ipc_map *m = b->ipc_maps;
    b->ipc_maps = NULL;
    pthread_mutex_unlock(&b->load_mu);
    while (m) {
        cuda_ipc_map *next = m->next;
        ipc_unmap(b, m);
        m = next;
    }
}
