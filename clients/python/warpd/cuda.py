"""cuda.py — CUDA arrays as the client sees them: the few driver calls CUDA IPC needs (_CudaDriver, libcuda.so.1
through ctypes; CudaError), which objects are GPU arrays (_gpu_kind: CuPy, PyTorch CUDA tensors,
__cuda_array_interface__), their pointer, size, type and device (_GpuArray, _lean_facts), and the
"cuda_ipc" object that hands one to the daemon (_ipc_spec). Imports neither framework until handed one."""
import base64
import ctypes
import threading

from .arrays import _np, to_array


class CudaError(OSError):
    """A CUDA driver call failed (libcuda.so.1 through ctypes)."""


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]  # CUipcMemHandle: CU_IPC_HANDLE_SIZE bytes


class _CudaDriver:
    """The few driver calls CUDA IPC needs, from libcuda.so.1 (ctypes). Each device's primary context (the
    one CuPy and PyTorch use) is retained once and made current around the calls (context(device))."""

    def __init__(self, lib=None):
        try:
            lib = lib or ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError(f"libcuda.so.1: {e}") from None
        c_int, c_uint, c_void_p, c_size_t, c_u64 = ctypes.c_int, ctypes.c_uint, ctypes.c_void_p, ctypes.c_size_t, \
            ctypes.c_uint64
        P = ctypes.POINTER

        def fn(name, *argtypes):
            try:
                f = getattr(lib, name)
            except AttributeError:
                raise CudaError(f"libcuda.so.1 has no {name}") from None
            f.restype, f.argtypes = c_int, list(argtypes)
            return f

        self._error_name = fn("cuGetErrorName", c_int, P(ctypes.c_char_p))
        self._init = fn("cuInit", c_uint)
        self._device_get = fn("cuDeviceGet", P(c_int), c_int)
        self._retain = fn("cuDevicePrimaryCtxRetain", P(c_void_p), c_int)
        self._release = fn("cuDevicePrimaryCtxRelease_v2", c_int)
        self._get_current = fn("cuCtxGetCurrent", P(c_void_p))
        self._push = fn("cuCtxPushCurrent_v2", c_void_p)
        self._pop = fn("cuCtxPopCurrent_v2", P(c_void_p))
        self._sync = fn("cuCtxSynchronize")
        self._range = fn("cuMemGetAddressRange_v2", P(c_u64), P(c_size_t), c_u64)
        self._ipc = fn("cuIpcGetMemHandle", P(_IpcHandle), c_u64)
        self._attr = fn("cuPointerGetAttribute", c_void_p, c_int, c_u64)
        self._dtoh = fn("cuMemcpyDtoH_v2", c_void_p, c_u64, c_size_t)
        self._check(self._init(0), "cuInit")
        self._ctx, self._lock = {}, threading.Lock()

    def _check(self, rc, what):
        if rc:
            name = ctypes.c_char_p()
            self._error_name(rc, ctypes.byref(name))
            raise CudaError(f"{what}: {(name.value or b'CUDA error').decode()} ({rc})")

    def _primary(self, device):
        with self._lock:
            if device not in self._ctx:
                dev, ctx = ctypes.c_int(), ctypes.c_void_p()
                self._check(self._device_get(ctypes.byref(dev), device), f"cuDeviceGet({device})")
                self._check(self._retain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
                self._ctx[device] = (dev.value, ctx.value)
            return self._ctx[device][1]

    class _Current:
        def __init__(self, drv, ctx):
            self.drv, self.ctx, self.pushed = drv, ctx, False

        def __enter__(self):
            cur = ctypes.c_void_p()
            self.drv._check(self.drv._get_current(ctypes.byref(cur)), "cuCtxGetCurrent")
            if cur.value != self.ctx:  # the framework's (primary) context is usually current already
                self.drv._check(self.drv._push(self.ctx), "cuCtxPushCurrent")
                self.pushed = True
            return self

        def __exit__(self, *exc):
            if self.pushed:
                self.drv._pop(ctypes.byref(ctypes.c_void_p()))

    def context(self, device):
        """`with drv.context(d):` device d's primary context is current inside."""
        return self._Current(self, self._primary(device))

    def sync_allocation(self, device, ptr):
        """What `with context(device): synchronize(); allocation_id(ptr)` does, in fewer Python steps (the
        lean path of a repeated IPC reduce): device's primary context made current if it is not, its work
        waited for, the unique id of the allocation holding ptr."""
        ctx = self._ctx.get(device)  # without _primary's lock once it is known
        v = ctypes.c_uint64()
        with self._Current(self, ctx[1] if ctx is not None else self._primary(device)):
            self._check(self._sync(), "cuCtxSynchronize")
            self._check(self._attr(ctypes.byref(v), 7, ptr), "cuPointerGetAttribute")
        return v.value

    def synchronize(self):
        """Waits for the current context's work (the framework's kernels that wrote an array)."""
        self._check(self._sync(), "cuCtxSynchronize")

    def address_range(self, ptr):
        """(base, size) of the allocation holding device address ptr."""
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        self._check(self._range(ctypes.byref(base), ctypes.byref(size), ptr), "cuMemGetAddressRange")
        return base.value, size.value

    def ipc_handle(self, base):
        """The 64-byte CUipcMemHandle of the allocation at base (cuMemAlloc'd memory, as cudaMalloc's)."""
        h = _IpcHandle()
        self._check(self._ipc(ctypes.byref(h), base), "cuIpcGetMemHandle")
        return ctypes.string_at(ctypes.addressof(h), 64)

    def allocation_id(self, ptr):
        """The process-wide unique id of the allocation holding ptr (CU_POINTER_ATTRIBUTE_BUFFER_ID): the
        same id is the same allocation, never one made later at the same address."""
        v = ctypes.c_uint64()
        self._check(self._attr(ctypes.byref(v), 7, ptr), "cuPointerGetAttribute")
        return v.value

    def pointer_device(self, ptr):
        """The ordinal of the device holding ptr (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)."""
        v = ctypes.c_int()
        self._check(self._attr(ctypes.byref(v), 9, ptr), "cuPointerGetAttribute")
        return v.value

    def copy_to_host(self, dst_addr, ptr, nbytes):
        self._check(self._dtoh(dst_addr, ptr, nbytes), "cuMemcpyDtoH")

    def close(self):
        with self._lock:
            held, self._ctx = self._ctx, {}
        for dev, _ in held.values():
            self._release(dev)


def _ipc_spec(drv, g):
    """The "cuda_ipc" object of PUT /v1/buffers for GPU array g: its allocation's handle, the array's
    offset in it. The caller has made g.device's context current."""
    base, size = drv.address_range(g.ptr)
    offset = g.ptr - base
    if offset < 0 or offset + g.nbytes > size:
        raise CudaError(f"the array [{g.ptr:#x}, +{g.nbytes}) is not inside its allocation [{base:#x}, +{size})")
    return {"handle": base64.b64encode(drv.ipc_handle(base)).decode(), "device": g.device, "offset": offset,
            "count": g.count, "type": g.type}


# __cuda_array_interface__ typestr and torch dtype → warpd type
_TYPESTR_TYPES = {"<i4": "i32", "<u4": "u32", "<i8": "i64", "<u8": "u64", "<f4": "f32", "<f8": "f64", "<f2": "f16"}
_TORCH_TYPES = {"torch.int32": "i32", "torch.uint32": "u32", "torch.int64": "i64", "torch.uint64": "u64",
                "torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16", "torch.bfloat16": "bf16"}


def _gpu_kind(x):
    """"torch" for a CUDA tensor, "cupy" for a CuPy array, "cai" for another object with
    __cuda_array_interface__ (Numba, ...), else None. Imports neither framework."""
    mod = type(x).__module__ or ""
    if mod.startswith("torch"):
        return "torch" if getattr(x, "is_cuda", False) else None
    if mod.startswith("numpy") or isinstance(x, (list, tuple, bytes, bytearray, memoryview, str, dict)):
        return None
    if mod.startswith("cupy") and isinstance(getattr(type(x), "__cuda_array_interface__", None), property):
        return "cupy"  # a CuPy array: its interface (a new dict each time) is read once, by _GpuArray
    try:
        if getattr(x, "__cuda_array_interface__", None) is None:
            return None
    except Exception:  # a framework may raise anything for a host object
        return None
    return "cupy" if mod.startswith("cupy") else "cai"


_LEAN_KINDS = {}  # type -> "cupy" or "torch": the types _lean_facts has seen


def _lean_facts(x):
    """(ptr, count, warpd type, device) of a non-empty C-contiguous CuPy array or CUDA tensor of a warpd
    type, read from its attributes (no __cuda_array_interface__ dict); None for anything else (the lean
    path of a repeated IPC reduce then steps aside)."""
    kind = _LEAN_KINDS.get(type(x))
    if kind is None:
        kind = _gpu_kind(x)
        if kind not in ("cupy", "torch"):
            return None
        _LEAN_KINDS[type(x)] = kind
    if kind == "cupy":
        if not x.flags.c_contiguous or not x.size:
            return None
        return x.data.ptr, x.size, _TYPESTR_TYPES.get(x.dtype.str), x.device.id
    if not x.is_cuda or not x.is_contiguous() or not x.numel():
        return None
    return x.data_ptr(), x.numel(), _TORCH_TYPES.get(str(x.dtype)), x.device.index or 0


class _GpuArray:
    """A contiguous GPU array as the client needs it: obj (contiguous: a copy when the caller's was not),
    kind, ptr, count, nbytes, type (None: no warpd type), device, shape."""

    def __init__(self, x, kind, drv_fn):
        self.kind = kind
        if kind == "torch":
            if not x.is_contiguous():
                x = x.contiguous()
            self.type = _TORCH_TYPES.get(str(x.dtype))
            self.ptr, self.count, esize = x.data_ptr(), x.numel(), x.element_size()
            self.device = x.device.index if x.device.index is not None else 0
            self.shape = tuple(x.shape)
        else:
            cai = x.__cuda_array_interface__
            shape, typestr = tuple(cai["shape"]), cai["typestr"]
            esize = int(typestr[2:])
            strides = cai.get("strides")
            if strides is not None and tuple(strides) != _c_strides(shape, esize):
                if kind != "cupy":
                    raise ValueError("a non-contiguous __cuda_array_interface__ array: make it contiguous first")
                import cupy
                x = cupy.ascontiguousarray(x)
                cai = x.__cuda_array_interface__
            self.type = _TYPESTR_TYPES.get(typestr.replace("=", "<").replace("|", "<"))
            self.ptr, self.shape = cai["data"][0], shape
            self.count = 1
            for d in shape:
                self.count *= d
            if kind == "cupy":
                self.device = x.device.id
            elif self.count:
                self.device = drv_fn().pointer_device(self.ptr)
            else:
                self.device = 0
        self.obj, self.nbytes = x, self.count * esize

    def empty_like(self):
        """A new contiguous array of the same kind, shape, dtype and device (a scan's output)."""
        if self.kind == "torch":
            import torch
            return torch.empty(self.shape, dtype=self.obj.dtype, device=self.obj.device)
        if self.kind == "cupy":
            import cupy
            with cupy.cuda.Device(self.device):
                return cupy.empty(self.shape, dtype=self.obj.dtype)
        return None

    def from_bytes(self, data):
        """Host bytes (little-endian, of this array's dtype) → an array of this kind on its device."""
        if self.kind == "torch":
            import torch
            t = torch.frombuffer(bytearray(data), dtype=self.obj.dtype) if len(data) else \
                torch.empty(0, dtype=self.obj.dtype)
            return t.reshape(self.shape).to(self.obj.device)
        if self.kind == "cupy":
            import cupy
            with cupy.cuda.Device(self.device):
                return cupy.asarray(_np.frombuffer(data, dtype=self.obj.dtype).reshape(self.shape))
        return to_array(data, self.type).reshape(self.shape) if _np is not None else data


def _c_strides(shape, esize):
    out, step = [], esize
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))
