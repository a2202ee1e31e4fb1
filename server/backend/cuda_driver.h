/* cuda_driver.h — the CUDA Driver API as warpd reaches it: dlopen("libcuda.so.1"), never linked. The
 * only dlsym is cuGetProcAddress_v2; every other entry point is resolved through it into one table
 * (STYLE §6), plus the error text helpers. Used by the cuda backend's files only (backend_cuda.c,
 * cuda_device.c, cuda_streams.c). A table is read-only once wp_cu_open returns: any thread may call
 * through it. */
#ifndef WP_CUDA_DRIVER_H
#define WP_CUDA_DRIVER_H

#include <cudaTypedefs.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/common.h"

/* The PFN_*_vNNNN typedefs below are, for each symbol, the newest variant at or below this version,
 * so this is the version we ask cuGetProcAddress for (asking for a newer one could hand back a
 * variant with another signature, e.g. cuCtxSynchronize gained a context argument in 13.0). */
#define WP_CU_API_VERSION 13000
_Static_assert(CUDA_VERSION >= WP_CU_API_VERSION, "warpd's driver table needs CUDA 13.0 headers or newer");

typedef struct wp_cu {
    PFN_cuGetErrorName_v6000 get_error_name;
    PFN_cuGetErrorString_v6000 get_error_string;
    PFN_cuInit_v2000 init;
    PFN_cuDeviceGetCount_v2000 device_get_count;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuDeviceGetName_v2000 device_get_name;
    PFN_cuDeviceGetAttribute_v2000 device_get_attribute;
    PFN_cuDeviceTotalMem_v3020 device_total_mem;
    PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 primary_ctx_release;
    PFN_cuDevicePrimaryCtxReset_v11000 primary_ctx_reset;
    PFN_cuCtxCreate_v12050 ctx_create;
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuCtxSetCurrent_v4000 ctx_set_current;
    PFN_cuCtxSynchronize_v13000 ctx_synchronize;
    PFN_cuMemGetInfo_v3020 mem_get_info;
    PFN_cuMemAlloc_v3020 mem_alloc;
    PFN_cuMemFree_v3020 mem_free;
    PFN_cuMemHostAlloc_v2020 mem_host_alloc;
    PFN_cuMemFreeHost_v2000 mem_free_host;
    PFN_cuMemHostGetDevicePointer_v3020 mem_host_get_device_pointer;
    PFN_cuMemHostRegister_v6050 mem_host_register;
    PFN_cuMemHostUnregister_v4000 mem_host_unregister;
    PFN_cuIpcOpenMemHandle_v11000 ipc_open_mem_handle;
    PFN_cuIpcCloseMemHandle_v4010 ipc_close_mem_handle;
    PFN_cuMemGetAddressRange_v3020 mem_get_address_range;
    PFN_cuPointerGetAttribute_v4000 pointer_get_attribute;
    PFN_cuMemcpyHtoDAsync_v3020 memcpy_htod_async;
    PFN_cuMemcpyDtoHAsync_v3020 memcpy_dtoh_async;
    PFN_cuMemcpyDtoDAsync_v3020 memcpy_dtod_async;
    PFN_cuMemsetD8Async_v3020 memset_d8_async;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuStreamSynchronize_v2000 stream_synchronize;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuEventRecord_v2000 event_record;
    PFN_cuEventSynchronize_v2000 event_synchronize;
    PFN_cuEventQuery_v2000 event_query;
    PFN_cuEventElapsedTime_v12080 event_elapsed_time;
    PFN_cuModuleLoadData_v2000 module_load_data;
    PFN_cuModuleUnload_v2000 module_unload;
    PFN_cuModuleGetFunction_v2000 module_get_function;
    PFN_cuLaunchKernel_v4000 launch_kernel;
    PFN_cuLaunchKernelEx_v11060 launch_kernel_ex;
    PFN_cuStreamBeginCapture_v10010 stream_begin_capture;
    PFN_cuStreamEndCapture_v10000 stream_end_capture;
    PFN_cuGraphInstantiateWithFlags_v11040 graph_instantiate;
    PFN_cuGraphLaunch_v10000 graph_launch;
    PFN_cuGraphExecDestroy_v10000 graph_exec_destroy;
    PFN_cuGraphDestroy_v10000 graph_destroy;
} wp_cu;

/* Loads libcuda and fills *cu; *lib gets the handle (wp_cu_close it), *driver_version the driver's
 * CUDA version. 503 "cuda_unavailable" with the reason when there is no driver or it is too old. */
int wp_cu_open(void **lib, wp_cu *cu, int *driver_version, wp_err *err);
void wp_cu_close(void *lib);

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" */
const char *wp_cu_error_text(const wp_cu *cu, CUresult r, char *buf, size_t n);
/* 500 "cuda_error": "<call> failed: <text>". Returns -1. */
int wp_cu_fail(const wp_cu *cu, wp_err *err, const char *call, CUresult r);
/* Errors after which the context is unusable until reset. */
bool wp_cu_is_sticky(CUresult r);

#endif
