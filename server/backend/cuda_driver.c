/* cuda_driver.c — the Driver API table (cuda_driver.h): dlopen, cuGetProcAddress for each entry point
 * at WP_CU_API_VERSION, and the error text helpers. Owns nothing but what wp_cu_open hands back. */
#include <dlfcn.h>
#include <stdio.h>

#include "cuda_driver.h"

#define WP_CU_LIB "libcuda.so.1"

static const struct {
    const char *name; /* base name, as cuGetProcAddress wants it */
    size_t slot;      /* offsetof(wp_cu, ...) */
} cu_syms[] = {
    {"cuGetErrorName", offsetof(wp_cu, get_error_name)},
    {"cuGetErrorString", offsetof(wp_cu, get_error_string)},
    {"cuInit", offsetof(wp_cu, init)},
    {"cuDeviceGetCount", offsetof(wp_cu, device_get_count)},
    {"cuDeviceGet", offsetof(wp_cu, device_get)},
    {"cuDeviceGetName", offsetof(wp_cu, device_get_name)},
    {"cuDeviceGetAttribute", offsetof(wp_cu, device_get_attribute)},
    {"cuDeviceTotalMem", offsetof(wp_cu, device_total_mem)},
    {"cuDevicePrimaryCtxRetain", offsetof(wp_cu, primary_ctx_retain)},
    {"cuDevicePrimaryCtxRelease", offsetof(wp_cu, primary_ctx_release)},
    {"cuDevicePrimaryCtxReset", offsetof(wp_cu, primary_ctx_reset)},
    {"cuCtxCreate", offsetof(wp_cu, ctx_create)},
    {"cuCtxDestroy", offsetof(wp_cu, ctx_destroy)},
    {"cuCtxSetCurrent", offsetof(wp_cu, ctx_set_current)},
    {"cuCtxSynchronize", offsetof(wp_cu, ctx_synchronize)},
    {"cuMemGetInfo", offsetof(wp_cu, mem_get_info)},
    {"cuMemAlloc", offsetof(wp_cu, mem_alloc)},
    {"cuMemFree", offsetof(wp_cu, mem_free)},
    {"cuMemHostAlloc", offsetof(wp_cu, mem_host_alloc)},
    {"cuMemFreeHost", offsetof(wp_cu, mem_free_host)},
    {"cuMemHostGetDevicePointer", offsetof(wp_cu, mem_host_get_device_pointer)},
    {"cuMemHostRegister", offsetof(wp_cu, mem_host_register)},
    {"cuMemHostUnregister", offsetof(wp_cu, mem_host_unregister)},
    {"cuIpcOpenMemHandle", offsetof(wp_cu, ipc_open_mem_handle)},
    {"cuIpcCloseMemHandle", offsetof(wp_cu, ipc_close_mem_handle)},
    {"cuMemGetAddressRange", offsetof(wp_cu, mem_get_address_range)},
    {"cuPointerGetAttribute", offsetof(wp_cu, pointer_get_attribute)},
    {"cuMemcpyHtoDAsync", offsetof(wp_cu, memcpy_htod_async)},
    {"cuMemcpyDtoHAsync", offsetof(wp_cu, memcpy_dtoh_async)},
    {"cuMemcpyDtoDAsync", offsetof(wp_cu, memcpy_dtod_async)},
    {"cuMemsetD8Async", offsetof(wp_cu, memset_d8_async)},
    {"cuStreamCreate", offsetof(wp_cu, stream_create)},
    {"cuStreamDestroy", offsetof(wp_cu, stream_destroy)},
    {"cuStreamSynchronize", offsetof(wp_cu, stream_synchronize)},
    {"cuEventCreate", offsetof(wp_cu, event_create)},
    {"cuEventDestroy", offsetof(wp_cu, event_destroy)},
    {"cuEventRecord", offsetof(wp_cu, event_record)},
    {"cuEventSynchronize", offsetof(wp_cu, event_synchronize)},
    {"cuEventQuery", offsetof(wp_cu, event_query)},
    {"cuEventElapsedTime", offsetof(wp_cu, event_elapsed_time)},
    {"cuModuleLoadData", offsetof(wp_cu, module_load_data)},
    {"cuModuleUnload", offsetof(wp_cu, module_unload)},
    {"cuModuleGetFunction", offsetof(wp_cu, module_get_function)},
    {"cuLaunchKernel", offsetof(wp_cu, launch_kernel)},
    {"cuLaunchKernelEx", offsetof(wp_cu, launch_kernel_ex)},
    {"cuStreamBeginCapture", offsetof(wp_cu, stream_begin_capture)},
    {"cuStreamEndCapture", offsetof(wp_cu, stream_end_capture)},
    {"cuGraphInstantiateWithFlags", offsetof(wp_cu, graph_instantiate)},
    {"cuGraphLaunch", offsetof(wp_cu, graph_launch)},
    {"cuGraphExecDestroy", offsetof(wp_cu, graph_exec_destroy)},
    {"cuGraphDestroy", offsetof(wp_cu, graph_destroy)},
};

/* Open-time failure: the daemon falls back to emu. */
#define OPEN_FAIL(err, ...) WP_FAIL((err), 503, "cuda_unavailable", "", __VA_ARGS__)

int wp_cu_open(void **lib, wp_cu *cu, int *driver_version, wp_err *err) {
    dlerror();
    *lib = dlopen(WP_CU_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!*lib) {
        const char *why = dlerror();
        return OPEN_FAIL(err, "%s could not be loaded (%s): no NVIDIA driver on this machine", WP_CU_LIB,
                         why ? why : "unknown reason");
    }
    PFN_cuGetProcAddress_v12000 get_proc = NULL;
    *(void **)&get_proc = dlsym(*lib, "cuGetProcAddress_v2");
    if (!get_proc)
        return OPEN_FAIL(err, "%s has no symbol %s (driver older than CUDA 12.0)", WP_CU_LIB, "cuGetProcAddress_v2");

    /* The driver's CUDA version first (cuDriverGetVersion exists since 2.2), so an old driver gets a
     * clear message rather than a symbol lookup refused with CUDA_ERROR_INVALID_VALUE. */
    PFN_cuDriverGetVersion_v2020 driver_get_version = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r =
        get_proc("cuDriverGetVersion", (void **)&driver_get_version, 2020, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || !driver_get_version)
        return OPEN_FAIL(err, "%s: cuGetProcAddress found no %s", WP_CU_LIB, "cuDriverGetVersion");
    int version = 0;
    if (driver_get_version(&version) != CUDA_SUCCESS)
        return OPEN_FAIL(err, "%s: %s failed", WP_CU_LIB, "cuDriverGetVersion");
    *driver_version = version;
    if (version < WP_CU_API_VERSION) {
        char have[32], need[32];
        snprintf(have, sizeof have, "%d.%d", version / 1000, version % 1000 / 10);
        snprintf(need, sizeof need, "%d.%d", WP_CU_API_VERSION / 1000, WP_CU_API_VERSION % 1000 / 10);
        return OPEN_FAIL(err, "the NVIDIA driver supports CUDA %s; warpd needs a driver for CUDA %s or newer", have,
                         need);
    }

    for (size_t i = 0; i < WP_ARRAY_LEN(cu_syms); i++) {
        void **slot = (void **)((char *)cu + cu_syms[i].slot);
        status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        r = get_proc(cu_syms[i].name, slot, WP_CU_API_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
        if (r != CUDA_SUCCESS || !*slot || status != CU_GET_PROC_ADDRESS_SUCCESS) {
            *slot = NULL;
            return OPEN_FAIL(err, "%s (driver %d.%d) has no %s for CUDA %d.%d (cuGetProcAddress)", WP_CU_LIB,
                             version / 1000, version % 1000 / 10, cu_syms[i].name, WP_CU_API_VERSION / 1000,
                             WP_CU_API_VERSION % 1000 / 10);
        }
    }
    return 0;
}

void wp_cu_close(void *lib) {
    if (lib) dlclose(lib);
}

const char *wp_cu_error_text(const wp_cu *cu, CUresult r, char *buf, size_t n) {
    const char *name = NULL, *str = NULL;
    if (cu->get_error_name && cu->get_error_name(r, &name) != CUDA_SUCCESS) name = NULL;
    if (cu->get_error_string && cu->get_error_string(r, &str) != CUDA_SUCCESS) str = NULL;
    if (name)
        snprintf(buf, n, "%s (%s)", name, str ? str : "no description");
    else
        snprintf(buf, n, "CUresult %d", (int)r);
    return buf;
}

int wp_cu_fail(const wp_cu *cu, wp_err *err, const char *call, CUresult r) {
    char text[160];
    return WP_FAIL(err, 500, "cuda_error", "", "%s failed: %s", call, wp_cu_error_text(cu, r, text, sizeof text));
}

bool wp_cu_is_sticky(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
        return true;
    default:
        return false;
    }
}
