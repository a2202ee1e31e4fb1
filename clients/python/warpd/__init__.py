"""warpd — a standard-library client (package warpd) and CLI (command warpctl) for the warpd HTTP API.

    from warpd import Client, WarpdError
    c = Client("http://127.0.0.1:8080")          # or $WARPD; "unix:/path/warpd.sock" for a Unix socket;
                                                 # token= or $WARPD_TOKEN for a daemon with --token-file
    r = c.warp("shfl_xor", width=16, args={"lane_mask": 1}, input={"iota": 32})
    r["output"]  # [1, 0, 3, 2, ...]
    c.reduce([1.5, 2, 3], type="f32", op="sum")["value"]
    c.reduce_by_key([1, 1, 2], [1.5, 2, 3], op="sum")  # (keys, values) of each run of equal keys

With numpy installed (optional), reduce/scan/buffer_put also take numpy arrays, sent as raw bytes
straight from the array's memory (no list), their warpd type from the dtype (int32 → i32, ...,
float16 → f16); scan of an array returns an array:
    c.scan(np.arange(5, dtype=np.int32), op="sum")   # array([ 0,  1,  3,  6, 10], dtype=int32)

Data where it already is (the data plane), when the daemon is local (loopback or a Unix socket):
    a = c.shared(1 << 24, "float32")   # a numpy array in a shared-memory region the daemon has mapped
    a[:] = ...                         # written in place; c.reduce(a), c.scan(a), c.buffer_put(a) and
    c.reduce(a[1000:])                 # their contiguous slices send {"shm": {id, offset, count}}, no copy
    c.scan(a, out=b)                   # b = c.shared(...): the daemon writes the scan into b
    c.reduce(big_numpy_array)          # >= SHM_AUTO_MIN_BYTES: copied once into a pooled region, not sent
    c.reduce(cupy_or_torch_cuda_array) # CUDA IPC: the daemon reads the array in place on the GPU; again
                                       # and again: through a doorbell channel (POST /v1/channels), no socket
transport= ("auto" default, "http", "shm", "ipc") per call or per Client chooses; "auto" falls back to
HTTP (and remembers) when the daemon refuses regions or IPC, an explicit choice raises instead.
Lifetimes: a shared() array's region is unregistered (DELETE /v1/shm/{id}) and its object unlinked
when the array and every view of it are garbage-collected, or at Client.close() / the end of a
`with Client(...) as c:` block / interpreter exit, whichever comes first; after that the array stays
valid memory of this process, no longer seen by the daemon (it goes over HTTP). The pooled regions
and the cached IPC buffers go at close(). Objects are named /warpd-py<pid>-<16 hex> (in /dev/shm), mode
0600 (shm_mode= for a daemon running as another user). A CUDA array must stay allocated while the client
caches its IPC buffer (until close() or ipc_release()): the daemon maps the allocation itself.

Every error the server returns ({"error": {"code", "field", "message"}}) becomes
WarpdError(status, code, field, message); an unreachable daemon is WarpdError(0, "connection_failed").

CLI (warpctl --help, after pip install ./clients/python; or python3 -m warpd --help):
    warpctl warp --family shfl_xor --width 16 --args lane_mask=1 --iota 32
    warpctl compile --family warp_allreduce --type f32 --op max --ptx
    warpctl info | health | families | metrics | whoami
    warpctl reduce --type f32 --op sum data.f32        (raw little-endian file; progress bar on stderr)
    warpctl scan --type i32 --op sum --data 1,2,3,4
    warpctl buffers put data.f32 --type f32 | list | get ID | delete ID
    warpctl jobs submit '{"kind":"reduce","request":{...}}' --wait | list | get ID | wait ID | cancel ID
    warpctl shm list | get ID | delete ID

The package, one module per concern (each says at its top what it owns):
    client.py     Client: HTTP (or a Unix socket), every endpoint       errors.py     WarpdError, refusals
    wire.py       HTTP/1.1 by hand on a kept socket                     arrays.py     pack/unpack, numpy
    shm.py        shared-memory regions, the pool, Client.shared()      progress.py   progress bars
    cuda.py       CUDA arrays and the driver (ctypes)                   ipc.py        Client's CUDA IPC path
    channel.py    doorbell channels (futexes)                           resources.py  what a Client frees
    cli.py        warpctl                                               __main__.py   python3 -m warpd
Every name the single-file module had that callers and tests use is importable from here.
"""
import sys as _sys
import types as _types

# The public API, and the names callers and tests reach as warpd.NAME (re-exported: noqa F401)
from .arrays import ELEM_SIZE, NUMPY_TYPES, PAR_COPY_MIN_BYTES, _np, array_bytes, pack, to_array, unpack  # noqa: F401
from .channel import CHANNEL_BYTES, CHANNEL_RETRY_S, CHANNEL_SPIN_US, _CH_TAKEN, _Channel  # noqa: F401
from .channel import _channels_usable  # noqa: F401
from .cli import PROGRESS_MIN_BYTES, _print_warp, main  # noqa: F401
from .client import DEFAULT_URL, SPIN_US, TRANSPORTS, Client  # noqa: F401
from .cuda import CudaError, _CudaDriver, _gpu_kind, _GpuArray, _ipc_spec, _lean_facts  # noqa: F401
from .errors import WarpdError
from .ipc import IPC_ALIGN, IPC_CACHE_MAX  # noqa: F401
from .progress import ProgressReader, progress_bar  # noqa: F401
from .shm import SHM_AUTO_MIN_BYTES, SHM_POOL_KEEP, _pool_size, _ShmPool  # noqa: F401
from .shm import _shm_create, _shm_name, _shm_unlink  # noqa: F401
from .wire import _recv_head, _spin_recv  # noqa: F401

__all__ = ["Client", "WarpdError", "CudaError", "pack", "unpack", "ELEM_SIZE"]
__version__ = "0.1.0"  # the daemon's (server/engine/app.h WP_VERSION); pyproject.toml reads it from here


class _Package(_types.ModuleType):
    """Setting warpd.NAME sets NAME too in each of the package's modules that holds the same object, so that
    a monkeypatch of warpd.X (unittest.mock.patch.object(warpd, "_recv_head", ...), as the tests do) reaches
    the code that calls X, as it did when the client was one module."""

    def __setattr__(self, name, value):
        old = self.__dict__.get(name, _Package)
        if old is not _Package:
            for modname, mod in list(_sys.modules.items()):
                if modname.startswith(__name__ + ".") and getattr(mod, name, _Package) is old:
                    setattr(mod, name, value)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
