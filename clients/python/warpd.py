#!/usr/bin/env python3
"""warpd.py — a standard-library client (module warpd) and CLI (command warpctl) for the warpd HTTP API.

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

Data where it already is (issue 22), when the daemon is local (loopback or a Unix socket):
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

CLI (warpctl --help, after pip install ./clients/python; or python3 clients/python/warpd.py --help):
    warpctl warp --family shfl_xor --width 16 --args lane_mask=1 --iota 32
    warpctl compile --family warp_allreduce --type f32 --op max --ptx
    warpctl info | health | families | metrics | whoami
    warpctl reduce --type f32 --op sum data.f32        (raw little-endian file; progress bar on stderr)
    warpctl scan --type i32 --op sum --data 1,2,3,4
    warpctl buffers put data.f32 --type f32 | list | get ID | delete ID
    warpctl jobs submit '{"kind":"reduce","request":{...}}' --wait | list | get ID | wait ID | cancel ID
    warpctl shm list | get ID | delete ID
"""
import argparse
import base64
import collections
import ctypes
import functools
import http.client
import io
import ipaddress
import json
import math
import mmap
import os
import secrets
import socket
import struct
import sys
import threading
import time
import urllib.parse
import weakref

__all__ = ["Client", "WarpdError", "CudaError", "pack", "unpack", "ELEM_SIZE"]

DEFAULT_URL = "http://127.0.0.1:8080"
ELEM_SIZE = {"i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8, "f16": 2, "bf16": 2}
_STRUCT = {"i32": "i", "u32": "I", "i64": "q", "u64": "Q", "f32": "f", "f64": "d", "f16": "e"}
PROGRESS_MIN_BYTES = 1 << 20  # uploads at least this large show a progress bar (CLI)
SHM_AUTO_MIN_BYTES = 1 << 20  # transport "auto": a numpy array this large goes through a pooled region
SHM_POOL_KEEP = 2             # idle pooled regions a client keeps for the next calls (more are freed)
SPIN_US = 2000                # a request polls its socket this long for the answer before it sleeps (Client spin_us)
CHANNEL_BYTES = 1 << 16       # a doorbell channel's region (POST /v1/channels): 30 KiB requests and answers
CHANNEL_RETRY_S = 30.0        # a daemon that had no channel to give (429, quota) is asked again this much later
CHANNEL_SPIN_US = 1000        # the daemon's channel thread polls this long after each request before it sleeps
IPC_CACHE_MAX = 64            # CUDA IPC buffers a client keeps registered (least recently used go first)
IPC_ALIGN = 16                # a CUDA array goes by IPC from an address that is a multiple of this: the
                              # daemon's kernels load 16-byte vectors (templates/reduce.cu), so another start
                              # is copied on the device first (a misaligned load kills the daemon's context)
TRANSPORTS = ("auto", "http", "shm", "ipc")
__version__ = "0.1.0"  # the daemon's (server/engine/app.h WP_VERSION); pyproject.toml reads it from here

try:  # optional: without numpy, lists, bytes and files work as before
    import numpy as _np
except ImportError:
    _np = None

# numpy dtype name → warpd type ("bfloat16" is ml_dtypes' dtype, when an array has it)
NUMPY_TYPES = {"int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64", "float32": "f32",
               "float64": "f64", "float16": "f16", "bfloat16": "bf16"}
# reduce/scan fields a raw body can carry as query arguments (server/api/api_reduce.c); others go as JSON
_RAW_QUERY_FIELDS = {"family", "strategy", "block", "width", "accumulate", "exclusive", "inclusive", "init",
                     "radius", "backend", "check", "output", "compile", "map", "ddof"}


class WarpdError(Exception):
    """An error answer of the daemon: HTTP status, stable code, the request field at fault, message."""

    def __init__(self, status, code, field="", message=""):
        super().__init__(f"{status} {code}" + (f" ({field})" if field else "") + (f": {message}" if message else ""))
        self.status, self.code, self.field, self.message = status, code, field or "", message or ""


# ---------------------------------------------------------------- binary data
def _bf16_bits(x):
    """float → bfloat16 bits, round to nearest even (NaN stays NaN)."""
    (b,) = struct.unpack("<I", struct.pack("<f", x))
    if math.isnan(x):
        return (b >> 16) | 0x40
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def pack(values, type):
    """A list of numbers → little-endian bytes of `type` (what data_b64 and raw bodies carry)."""
    if type not in ELEM_SIZE:
        raise ValueError(f"unknown type {type!r}; one of {' '.join(ELEM_SIZE)}")
    if _is_array(values):
        return bytes(array_bytes(values, type)[0])
    vals = [_number(v, type) for v in values]
    if type == "bf16":
        return struct.pack(f"<{len(vals)}H", *[_bf16_bits(float(v)) for v in vals])
    return struct.pack(f"<{len(vals)}{_STRUCT[type]}", *vals)


def unpack(data, type):
    """Little-endian bytes of `type` → a list of numbers."""
    size = ELEM_SIZE[type]
    if len(data) % size:
        raise ValueError(f"{len(data)} bytes is not a whole number of {type} elements")
    n = len(data) // size
    if type == "bf16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in struct.unpack(f"<{n}H", data)]
    return list(struct.unpack(f"<{n}{_STRUCT[type]}", data))


def _number(v, type):
    if isinstance(v, str):  # JSON spellings: 64-bit integers as strings, "NaN", "Infinity"
        s = v.strip()
        if s in ("NaN", "nan"):
            return math.nan
        if s in ("Infinity", "inf", "+Infinity"):
            return math.inf
        if s in ("-Infinity", "-inf"):
            return -math.inf
        return int(s, 0) if type[0] in "iu" else float(s)
    return int(v) if type[0] in "iu" else float(v)


def _is_array(x):
    return _np is not None and isinstance(x, _np.ndarray)


def _numpy_dtype(type):
    """The little-endian numpy dtype of a warpd type; None for bf16 unless ml_dtypes is installed."""
    if type == "bf16":
        try:
            import ml_dtypes
        except ImportError:
            return None
        return _np.dtype(ml_dtypes.bfloat16)
    return _np.dtype("<" + {"i": "i", "u": "u", "f": "f"}[type[0]] + str(ELEM_SIZE[type]))


def _bf16_bits_array(a):
    """A float array → bfloat16 bits (uint16), round to nearest even, NaN stays NaN (as _bf16_bits)."""
    b = _np.ascontiguousarray(a, dtype="<f4").view("<u4")
    bits = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype("<u2")
    nan = _np.isnan(b.view("<f4"))
    bits[nan] = ((b[nan] >> 16) | 0x40).astype("<u2")
    return bits


def array_bytes(arr, type=None):
    """A numpy array → (a memoryview of its bytes, its warpd type), for a raw body: no copy when the array
    is already contiguous, little-endian and of `type`. type=None takes it from the dtype; another type
    converts (astype; bf16 from floats rounds to nearest even, and uint16 arrays are taken as bf16 bits).
    Several dimensions are sent in C order, flattened."""
    have = NUMPY_TYPES.get(arr.dtype.name)
    if type is None:
        if have is None:
            raise ValueError(f"numpy dtype {arr.dtype} has no warpd type; use one of "
                             f"{', '.join(n for n in NUMPY_TYPES if n != 'bfloat16')} or pass type=")
        type = have
    if type not in ELEM_SIZE:
        raise ValueError(f"unknown type {type!r}; one of {' '.join(ELEM_SIZE)}")
    if type != have:
        want = _numpy_dtype(type)
        if type == "bf16" and arr.dtype == _np.uint16:
            arr = arr.astype("<u2", copy=False)
        elif want is None:  # bf16 without ml_dtypes: round the values to bfloat16 bits here
            arr = _bf16_bits_array(arr)
        else:
            arr = arr.astype(want)
    elif arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    arr = _np.ascontiguousarray(arr).reshape(-1)
    return memoryview(arr.view(_np.uint8)), type


def to_array(data, type):
    """Little-endian bytes of `type` → a numpy array (bf16: ml_dtypes' bfloat16, else float32 values)."""
    if len(data) % ELEM_SIZE[type]:
        raise ValueError(f"{len(data)} bytes is not a whole number of {type} elements")
    dt = _numpy_dtype(type)
    if dt is None:  # bf16 bits → the float32 they are the top half of
        return (_np.frombuffer(data, dtype="<u2").astype("<u4") << 16).view("<f4")
    return _np.frombuffer(data, dtype=dt).copy()


class ProgressReader(io.RawIOBase):
    """A readable body that reports how much of it was sent: progress(done_bytes, total_bytes)."""

    def __init__(self, data, progress, chunk=1 << 20):
        # bytes-like data is read as slices of one memoryview (a numpy array's memory is not copied)
        self._view = memoryview(data).cast("B") if isinstance(data, (bytes, bytearray, memoryview)) else None
        self._f = data
        self._total = len(self._view) if self._view is not None else _file_size(data)
        self._done, self._progress, self._chunk = 0, progress, chunk

    def __len__(self):
        return self._total

    def readable(self):
        return True

    def read(self, n=-1):
        n = self._chunk if n is None or n < 0 else min(n, self._chunk)
        b = self._view[self._done:self._done + n] if self._view is not None else self._f.read(n)
        self._done += len(b)
        if self._progress:
            self._progress(self._done, self._total)
        return b


def _file_size(f):
    pos = f.tell()
    f.seek(0, os.SEEK_END)
    end = f.tell()
    f.seek(pos)
    return end - pos


_bars_open = set()  # streams with an unfinished bar: an error message starts on a new line


def progress_bar(label="upload", stream=None, width=30):
    """A progress callback drawing `label [#####     ]  42%  12.0/28.6 MiB` on stderr."""
    stream = stream or sys.stderr
    state = {"last": -1.0}

    def show(done, total):
        frac = 1.0 if not total else min(1.0, done / total)
        if frac < 1.0 and frac - state["last"] < 0.01:
            return
        state["last"] = frac
        _bars_open.add(stream)
        fill = int(frac * width)
        if total and total > 1024:
            amount = f"{done / 1048576:.1f}/{total / 1048576:.1f} MiB"
        else:
            amount = f"{done}/{total}"
        stream.write(f"\r{label} [{'#' * fill}{' ' * (width - fill)}] {frac * 100:3.0f}%  {amount}")
        if frac >= 1.0:
            stream.write("\n")
            _bars_open.discard(stream)
        stream.flush()

    return show


# ---------------------------------------------------------------- shared-memory regions (issue 22)
def _shm_name(prefix):
    """A fresh object name under the daemon's --shm-prefix: /warpd-py<pid>-<16 hex>."""
    return f"{prefix}-py{os.getpid()}-{secrets.token_hex(8)}"


def _shm_path(name):  # where shm_open keeps NAME on Linux (glibc): /dev/shm/NAME without its "/"
    return "/dev/shm/" + name.lstrip("/")


def _shm_create(name, size, mode=0o600):
    """Creates the POSIX shared-memory object `name` (O_EXCL) of `size` bytes, its pages reserved up front
    (posix_fallocate: a full /dev/shm is an OSError here, not a SIGBUS when the array is written) and
    mapped read-write; returns the mmap (its descriptor is closed: the mapping keeps the object). mode: the
    permissions, or (permissions, group id or None): the object is given that group (the packaged
    daemon's warpd-shm) and exactly those permissions, whatever the umask."""
    mode, gid = mode if isinstance(mode, tuple) else (mode, None)
    flags = os.O_CREAT | os.O_EXCL | os.O_RDWR
    try:
        import _posixshmem  # what multiprocessing.shared_memory uses: shm_open(3)
        fd = _posixshmem.shm_open(name, flags, mode=mode)
    except ImportError:
        fd = os.open(_shm_path(name), flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        if gid is not None:
            os.fchown(fd, -1, gid)
            os.fchmod(fd, mode)
        os.ftruncate(fd, size)
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, size)
        return mmap.mmap(fd, size)
    except BaseException:
        _shm_unlink(name)
        raise
    finally:
        os.close(fd)


def _shm_unlink(name):
    try:
        import _posixshmem
        _posixshmem.shm_unlink(name)
    except ImportError:
        try:
            os.unlink(_shm_path(name))
        except FileNotFoundError:
            pass
    except FileNotFoundError:
        pass


def _buffer_address(buf):
    """The address of a writable buffer's first byte (an mmap), without keeping an export of it."""
    c = ctypes.c_char.from_buffer(buf)
    try:
        return ctypes.addressof(c)
    finally:
        del c


# Refusals after which transport "auto" stops trying regions with this daemon (it says it will not map
# them, cannot see our objects, or predates /v1/shm); shm_quota and a full /dev/shm only skip one call.
_SHM_REFUSALS = {"shm_disabled", "shm_remote", "shm_not_found", "shm_denied", "bad_name", "not_shared_memory"}
_IPC_REFUSALS = {"needs_gpu", "shm_disabled", "shm_remote"}  # the daemon cannot take IPC buffers at all


def _route_missing(e):
    """An old daemon: no such route (404 not_found with no field, 405), or the field is unknown to it."""
    return (e.status == 404 and e.code == "not_found" and not e.field) or e.status == 405 or \
        (e.code == "unknown_field" and e.field.split(".")[0] in ("shm", "cuda_ipc", "output"))


def _region_gone(e):  # a request named a region the daemon no longer has (it restarted, or a DELETE raced)
    return e.status == 404 and e.code in ("unknown_shm", "not_found") and \
        (e.field.startswith("shm") or e.field.startswith("output") or e.field == "id")


class _Region:
    """One shared-memory object of ours, mapped here and registered with the daemon (POST /v1/shm).
    release() unregisters it, unlinks the name and unmaps it once nothing here uses the mapping.
    It holds `remote` (a plain Client for the DELETE), never the Client that made it."""

    def __init__(self, remote, prefix, size, mode):
        self.remote, self.size = remote, size
        self.name = _shm_name(prefix)
        self.mm = _shm_create(self.name, size, mode)
        self.addr = _buffer_address(self.mm)
        self.id = None
        self.dead = False
        self.lock = threading.Lock()

    def register(self, stale=None):
        """POST /v1/shm: the id it answers. Again (stale: the id the daemon no longer knows) only when no
        other thread has registered it again since."""
        with self.lock:
            if self.dead:
                raise WarpdError(0, "region_released", "", f"{self.name} was released")
            if stale is None or self.id == stale:
                self.id = self.remote._json("POST", "/v1/shm", {"name": self.name, "offset": 0,
                                                                "bytes": self.size})["id"]
            return self.id

    def holds(self, addr, nbytes):
        return not self.dead and self.addr <= addr and addr + nbytes <= self.addr + self.size

    def release(self):
        """Idempotent: DELETE /v1/shm/{id} (errors ignored: the daemon may be gone), unlink, unmap if unused."""
        with self.lock:
            if self.dead:
                return
            self.dead = True
            rid, self.id = self.id, None
        if rid:
            try:
                self.remote._json("DELETE", "/v1/shm/" + urllib.parse.quote(rid, safe=""))
            except (WarpdError, OSError):
                pass
        _shm_unlink(self.name)
        mm, self.mm = self.mm, None
        try:
            mm.close()
        except BufferError:
            pass  # an array still uses the mapping: it is unmapped when the last one goes


# A doorbell channel's words (the daemon's engine/channels.h has the layout): byte offsets in its region.
_CH_REQ_SEQ, _CH_REQ_ROUTE, _CH_TAKEN, _CH_DAEMON_SLEEPING = 64, 68, 128, 132
_CH_ANS_SEQ, _CH_ANS_STATUS, _CH_CLIENT_SLEEPING = 192, 196, 256  # ans_len 200, ans_octets 204 follow ans_status
_CH_ROUTES = {"/v1/reduce": 1, "/v1/scan": 2}
_CH_WORDS = 512  # the header's words a client reads and writes (a memoryview of 32-bit words over them: one
                 # store a word; struct.pack_into zeroes its bytes first, so another process could read 0)
_SYS_FUTEX = 202  # x86-64
_CH_GONE_S = 1.0  # a request the daemon has not taken after this long: the channel is gone


class _Futex:
    """FUTEX_WAIT / FUTEX_WAKE on a word of a shared mapping (non-private: the daemon is another process)."""
    _libc = None

    class _Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    @classmethod
    def _syscall(cls):
        if cls._libc is None:
            cls._libc = ctypes.CDLL(None, use_errno=True)
            cls._libc.syscall.restype = ctypes.c_long
        return cls._libc.syscall

    @classmethod
    def wake(cls, addr):  # every waiter, as the daemon wakes: a waiter of someone else's cannot take it
        cls._syscall()(ctypes.c_long(_SYS_FUTEX), ctypes.c_void_p(addr), ctypes.c_int(1), ctypes.c_int(0x7FFFFFFF),
                       None, None, ctypes.c_int(0))

    @classmethod
    def wait(cls, addr, val, seconds):
        ts = cls._Timespec(int(seconds), int((seconds % 1) * 1e9))
        cls._syscall()(ctypes.c_long(_SYS_FUTEX), ctypes.c_void_p(addr), ctypes.c_int(0), ctypes.c_uint(val),
                       ctypes.byref(ts), None, ctypes.c_int(0))


@functools.lru_cache(maxsize=None)  # asked on every lean call: once
def _channels_usable():
    """Doorbell channels need Linux futexes and a machine whose plain loads and stores are ordered as the
    daemon's atomics expect of this side (x86-64: a store is seen after the stores before it)."""
    import platform
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


class _Channel:
    """A doorbell channel (POST /v1/channels) in a region of ours: call() writes a request's JSON body into
    the region, bumps req_seq (waking the daemon's channel thread if it sleeps), and polls ans_seq for
    spin_us, then sleeps on it (futex) until the answer is there — no socket, no HTTP. One call at a time
    (call returns None when another thread holds it, the body is too large, or the channel is gone: the
    caller then goes by HTTP). close() deletes the channel and releases the region."""

    def __init__(self, region, info, remote):
        self.region, self.id, self.remote = region, info["id"], remote
        self.ttl_s, self.last = info["ttl_s"], time.monotonic()
        lay = info["layout"]
        self.req_off, self.req_max = lay["request_offset"], lay["request_bytes"]
        self.ans_off, self.ans_max = lay["answer_offset"], lay["answer_bytes"]
        self.mm, self.addr = region.mm, region.addr
        self.words = memoryview(region.mm)[:_CH_WORDS].cast("I")  # released at close(), before the mapping
        self.seq = self.words[_CH_REQ_SEQ >> 2]
        self.lock = threading.Lock()
        self.dead = False

    def _u32(self, off):
        return self.words[off >> 2]

    def call(self, path, body, spin_us, timeout):
        """(status, answer bytes, True when they are application/octet-stream rather than JSON), or None: not
        sent (busy, too large, gone) or not taken in time."""
        route = _CH_ROUTES.get(path)
        if route is None or len(body) > self.req_max or self.dead or not self.lock.acquire(blocking=False):
            return None
        try:
            if self.dead:  # closed while this thread waited for the lock: the mapping may be gone
                return None
            now = time.monotonic()
            if now - self.last > self.ttl_s / 2 and not self.alive():
                self.dead = True  # closed by the daemon after ttl_s idle, or the daemon restarted
                return None
            self.last = now
            mm, w, seq = self.mm, self.words, (self.seq + 1) & 0xFFFFFFFF
            mm[self.req_off:self.req_off + len(body)] = body
            w[_CH_REQ_ROUTE >> 2], w[(_CH_REQ_ROUTE >> 2) + 1] = route, len(body)  # req_route, req_len
            w[_CH_REQ_SEQ >> 2] = seq  # after the bytes (x86-64 keeps stores in order)
            self.seq = seq
            if self._u32(_CH_DAEMON_SLEEPING):
                _Futex.wake(self.addr + _CH_REQ_SEQ)
            if not self._wait(seq, spin_us, timeout):
                self.dead = True
                return None
            i = _CH_ANS_STATUS >> 2
            status, n, octets = w[i], w[i + 1], w[i + 2]  # ans_status, ans_len, ans_octets: 196, 200, 204
            return status, bytes(mm[self.ans_off:self.ans_off + min(n, self.ans_max)]), octets == 1
        finally:
            self.lock.release()

    def _wait(self, seq, spin_us, timeout):
        """Until ans_seq is seq: polled for spin_us, then slept on. False when the channel is gone (the daemon
        has not taken the request within _CH_GONE_S, or GET /v1/channels/{id} no longer answers: closed,
        expired, the daemon stopped); TimeoutError after timeout seconds."""
        u32, t0 = self._u32, time.perf_counter()
        end, rewoken, asked = t0 + spin_us * 1e-6, False, t0
        while u32(_CH_ANS_SEQ) != seq:
            now = time.perf_counter()
            if not rewoken and now - t0 > 0.001:
                # the bump and the look at daemon_sleeping are a store then a load, which the CPU may
                # reorder: a daemon that fell asleep just then has missed its wake; a second one costs little
                if u32(_CH_TAKEN) != seq:
                    _Futex.wake(self.addr + _CH_REQ_SEQ)
                rewoken = True
            if now < end:
                continue
            taken = u32(_CH_TAKEN) == seq
            if (not taken and now - t0 > _CH_GONE_S) or (now - asked > (0.05 if not taken else 1.0)):
                if (not taken and now - t0 > _CH_GONE_S) or not self.alive():
                    return False
                asked = time.perf_counter()
            if timeout is not None and now - t0 > timeout:
                self.dead = True
                raise TimeoutError(f"no answer on channel {self.id} within {timeout} s")
            self.words[_CH_CLIENT_SLEEPING >> 2] = 1
            v = u32(_CH_ANS_SEQ)  # the value the sleep compares: an answer after this read wakes it
            if v != seq:
                _Futex.wait(self.addr + _CH_ANS_SEQ, v, 0.05)
            self.words[_CH_CLIENT_SLEEPING >> 2] = 0
        return True

    def alive(self):
        """GET /v1/channels/{id} answers 200."""
        try:
            self.remote._json("GET", "/v1/channels/" + urllib.parse.quote(self.id, safe=""))
            return True
        except (WarpdError, OSError):
            return False

    def close(self):
        with self.lock:  # a call in flight on another thread ends first: the mapping goes below
            self.dead = True
            self.words.release()
        try:
            self.remote._json("DELETE", "/v1/channels/" + urllib.parse.quote(self.id, safe=""))
        except (WarpdError, OSError):
            pass
        self.region.release()


def _pool_size(need):
    """A pooled region's size for `need` bytes: whole MiB, and past 8 MiB within 1/8 of a power of two."""
    step = max(1 << 20, 1 << max(0, need.bit_length() - 4))
    return max(step, -(-need // step) * step)


class _ShmPool:
    """Regions that take copies of ordinary arrays: lease(n) lends an idle region of at least n bytes to one
    call at a time (thread-safe), making a larger one when none fits; give() takes it back and keeps at
    most `keep` idle ones (the smallest go). close() releases them all, leased ones when they come back."""

    def __init__(self, make, keep=SHM_POOL_KEEP):
        self._make, self._keep = make, keep
        self._idle, self._lent = [], set()
        self._lock = threading.Lock()
        self._closed = False

    def lease(self, nbytes):
        with self._lock:
            fits = [r for r in self._idle if r.size >= nbytes and not r.dead]
            if fits:
                r = min(fits, key=lambda x: x.size)
                self._idle.remove(r)
                self._lent.add(r)
                return r
        r = self._make(_pool_size(nbytes))  # outside the lock: creating and registering takes a request
        with self._lock:
            self._lent.add(r)
        return r

    def give(self, r):
        drop = []
        with self._lock:
            self._lent.discard(r)
            if self._closed or r.dead:
                drop.append(r)
            else:
                self._idle.append(r)
                self._idle.sort(key=lambda x: x.size, reverse=True)
                drop += self._idle[self._keep:]
                del self._idle[self._keep:]
        for d in drop:
            d.release()

    def sizes(self):
        with self._lock:
            return sorted(r.size for r in self._idle), sorted(r.size for r in self._lent)

    def trim(self):
        with self._lock:
            drop, self._idle = self._idle, []
        for d in drop:
            d.release()

    def close(self):
        with self._lock:
            self._closed = True
        self.trim()


class _Resources:
    """A client's regions (its shared() arrays' and the pool's), its cached CUDA IPC buffers and the CUDA
    driver. Holds `remote`, a plain Client for the requests that free them, never the Client itself, so
    that a finalizer of the Client (or of an array) can close them."""

    def __init__(self, remote, prefix, mode):
        self.remote, self.prefix, self.mode = remote, prefix, mode
        self.lock = threading.Lock()
        self.shared = ()  # the shared() arrays' regions: a tuple replaced under lock, read without it
        self.pool = _ShmPool(self.new_region)
        self.ipc = collections.OrderedDict()  # (handle b64, device, offset, count, type) → buffer id
        self.ipc_seen = {}  # (allocation id, device, address, count, type) → that key
        self.cuda = None  # _CudaDriver (tests put a stand-in here)
        self.channel = None  # _Channel: a doorbell for repeated small calls (Client._channel)
        self.channel_refused = None  # why the daemon gave none ("403 channels_disabled"), or None
        self.channel_retry = 0.0  # time.monotonic() before which no channel is asked for again

    def new_region(self, size):
        """A registered region of `size` bytes: the object made, mapped, then POST /v1/shm."""
        r = _Region(self.remote, self.prefix, size, self.mode)
        try:
            r.register()
        except BaseException:
            r.release()
            raise
        return r

    def add_shared(self, r):
        with self.lock:
            self.shared = tuple(x for x in self.shared if not x.dead) + (r,)

    def delete_buffer(self, bid):
        try:
            self.remote._json("DELETE", "/v1/buffers/" + urllib.parse.quote(bid, safe=""))
        except (WarpdError, OSError):
            pass

    def drop_ipc(self):
        with self.lock:
            ids, self.ipc = list(self.ipc.values()), collections.OrderedDict()
        for bid in ids:
            self.delete_buffer(bid)

    def open_channel(self):
        """A doorbell channel in a new region of CHANNEL_BYTES (made once; None when refused)."""
        with self.lock:
            if self.channel is not None or self.channel_refused is not None or time.monotonic() < self.channel_retry:
                return self.channel
        try:
            r = self.new_region(CHANNEL_BYTES)
        except WarpdError as e:
            self._channel_refused(e)
            return None
        try:
            info = self.remote._json("POST", "/v1/channels", {"shm": {"id": r.id}, "spin_us": CHANNEL_SPIN_US})
        except WarpdError as e:
            r.release()
            self._channel_refused(e)
            return None
        except BaseException:
            r.release()
            raise
        ch = _Channel(r, info, self.remote)
        with self.lock:
            if self.channel is None:
                self.channel, ch = ch, None
        if ch is not None:  # another thread's came first
            ch.close()
        return self.channel

    def _channel_refused(self, e):
        """A daemon that will never give one (403: off or not for this peer; 404/405: too old for channels)
        is not asked again; a full one (429, 413 shm_quota, 5xx) in CHANNEL_RETRY_S."""
        with self.lock:
            if e.status in (403, 404, 405) or (e.status == 400 and e.code in _SHM_REFUSALS):
                self.channel_refused = f"{e.status} {e.code}"
            else:
                self.channel_retry = time.monotonic() + CHANNEL_RETRY_S

    def drop_channel(self):
        with self.lock:
            ch, self.channel = self.channel, None
        if ch is not None:
            ch.close()

    def close(self):
        self.drop_channel()
        self.pool.close()
        with self.lock:
            regions, self.shared = self.shared, ()
        for r in regions:
            r.release()
        self.drop_ipc()
        with self.lock:
            cuda, self.cuda = self.cuda, None
        if cuda is not None and hasattr(cuda, "close"):
            cuda.close()
        self.remote._drop_connection()  # this thread's kept connection of the requests above


def _native(dt):
    return dt.byteorder in ("=", "|") or (dt.byteorder == "<") == (sys.byteorder == "little")


def _typed(arr, type):
    """(src, type, count): arr itself when its dtype is the type's, native and little-endian (copied into a
    region by np.copyto, in any layout), else its converted little-endian bytes (array_bytes)."""
    have = NUMPY_TYPES.get(arr.dtype.name)
    if have is not None and type in (None, have) and _native(arr.dtype) and sys.byteorder == "little":
        return arr, have, arr.size
    view, type = array_bytes(arr, type)
    return view, type, len(view) // ELEM_SIZE[type]


PAR_COPY_MIN_BYTES = 64 << 20  # copies into and out of pooled regions this large run on several threads


def _copyto(dst, src):
    """np.copyto, on up to 8 threads (numpy lets go of the GIL) when both are C-contiguous and large: one
    thread copies about 10 GB/s, the memory bus takes 3x that (H200 host: 1 GiB in 99 ms, 30 on 8)."""
    k = min(8, os.cpu_count() or 1)
    if dst.nbytes < PAR_COPY_MIN_BYTES or k < 2 or not (dst.flags.c_contiguous and src.flags.c_contiguous):
        _np.copyto(dst, src)
        return
    d, s = dst.reshape(-1), src.reshape(-1)
    step = -(-d.size // k)
    ts = [threading.Thread(target=_np.copyto, args=(d[i:i + step], s[i:i + step])) for i in range(0, d.size, step)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def _copy_in(region, src, count):
    """src (from _typed) into the start of the region's mapping."""
    if _is_array(src):
        if count:
            dst = _np.frombuffer(region.mm, dtype=src.dtype, count=count)
            _copyto(dst.reshape(src.shape), src)
            del dst
    else:
        region.mm[0:len(src)] = src


def _fill_gpu(g, out, got):
    """Copies a scan's result (an array of g's kind) into the caller's out= array and returns out."""
    if g.kind == "torch":
        out.copy_(got.reshape(out.shape))
    else:
        out[...] = got.reshape(out.shape)
    return out


def _fill(out, got):
    """Copies a result into the caller's out= array (of its size) and returns out."""
    if out.size != got.size:
        raise ValueError(f"out= holds {out.size} elements; the result has {got.size}")
    _np.copyto(out, got.reshape(out.shape), casting="same_kind")
    return out


# ---------------------------------------------------------------- CUDA arrays (CUDA IPC)
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


# ---------------------------------------------------------------- the client
class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket file (warpd --listen unix:PATH); requests say Host: localhost."""

    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


_JSON_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # request bodies (made once)
_HEADER_NAMES = {}  # an answer's header names as received -> titled (_exchange)


def _spin_recv(sock, spin_us, timeout):
    """What the socket has within spin_us, polled without sleeping (b"" when nothing came: the caller
    then sleeps in recv as usual); the socket's timeout is put back."""
    sock.settimeout(0.0)
    end = time.perf_counter() + spin_us * 1e-6
    try:
        while True:
            try:
                got = sock.recv(65536)
                if not got:
                    raise http.client.RemoteDisconnected("the server closed the connection without an answer")
                return got
            except (BlockingIOError, InterruptedError):
                if time.perf_counter() > end:
                    return b""
    finally:
        sock.settimeout(timeout)


def _recv_head(sock, spin_us, timeout):
    """An answer's bytes through the end of its head (the blank line), and what came after it: polled
    for spin_us first (_spin_recv), then read as they come."""
    buf = bytearray(_spin_recv(sock, spin_us, timeout) if spin_us > 0 else b"")
    while b"\r\n\r\n" not in buf:
        got = sock.recv(65536)
        if not got:
            raise http.client.RemoteDisconnected("the server closed the connection without an answer")
        buf += got
    return buf


class Client:
    """One warpd daemon. Methods return the decoded JSON answer (dict) unless said otherwise."""

    def __init__(self, base_url=None, timeout=120.0, token=None, *, transport="auto", shm_prefix="/warpd",
                 shm_mode=None, shm_group=None, spin_us=SPIN_US, channel=True):
        """transport: how numpy and CUDA arrays reach the daemon unless a call says otherwise — "auto" (a
        shared() array's region, CUDA IPC for GPU arrays, a pooled region for numpy arrays of at least
        SHM_AUTO_MIN_BYTES, when the daemon is local; HTTP otherwise or when the daemon refuses), "http",
        "shm" (a region always; refusals raise) or "ipc" (GPU arrays by CUDA IPC; refusals raise; host
        arrays as "auto"). Lists, bytes and files always go by HTTP. shm_prefix: the daemon's --shm-prefix;
        shm_mode: the objects' permissions (default 0600: a daemon of another user cannot map them, and
        "auto" then goes by HTTP); shm_group: a group name or id the objects are given, with mode 0660 by
        default: "warpd-shm" lets the Debian package's daemon (its DynamicUser is in that group) map them,
        when this user is a member (adduser USER warpd-shm). spin_us: how long a request on a kept
        plain-HTTP or Unix-socket connection polls its socket for the answer before it sleeps in recv (a
        thread woken from recv comes back tens of microseconds later on a cold core: a repeated CUDA IPC
        reduce, issue 22); 0 sleeps at once. It spends that much of one CPU at most per request. channel:
        a repeated reduce of a CUDA array (its IPC buffer known) goes through a doorbell channel (POST
        /v1/channels: the request and answer pass through a small region of ours, no socket) when the
        daemon is local and gives one; False keeps it on HTTP."""
        self.base = (base_url or os.environ.get("WARPD") or DEFAULT_URL).rstrip("/")
        self.timeout = timeout
        self.spin_us = spin_us
        self.channel = channel
        self.token = token or os.environ.get("WARPD_TOKEN") or None  # sent as Authorization: Bearer
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
        if shm_group is not None and not isinstance(shm_group, int):
            import grp
            shm_group = grp.getgrnam(shm_group).gr_gid  # KeyError: no such group
        if shm_mode is None:
            shm_mode = 0o600 if shm_group is None else 0o660
        self.transport, self.shm_prefix, self.shm_mode = transport, shm_prefix, shm_mode
        self.shm_group = shm_group
        self.counts = {"http": 0, "shm": 0, "ipc": 0}  # arrays sent each way (reduce, scan, buffer_put)
        self.shm_refused = None  # why "auto" stopped using regions with this daemon ("403 shm_disabled"), or None
        self.ipc_refused = None  # likewise for CUDA IPC ("400 needs_gpu")
        self._ipc_no_output = False  # the daemon writes no scan into an IPC buffer: the scan comes back as bytes
        self._res = None         # _Resources: regions, the pool, IPC buffers; made on first use
        self._res_final = None
        self._lock = threading.Lock()
        self._tls = threading.local()  # each thread's kept connection (_send)
        self._fast_req = {}  # (origin, host line, buffer id, op) -> (a reduce's whole HTTP request, its JSON body)

    # -- lifetime: regions, pooled regions and IPC buffers go at close()
    def close(self):
        """Unregisters and unlinks this client's regions (shared() arrays stay valid memory here, no longer
        the daemon's) and deletes its cached CUDA IPC buffers. The client stays usable."""
        self._drop_connection()
        with self._lock:
            res, fin, self._res, self._res_final = self._res, self._res_final, None, None
        if fin is not None:
            fin.detach()
        if res is not None:
            res.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _resources(self):
        with self._lock:
            if self._res is None:
                self._res = _Resources(Client(self.base, self.timeout, self.token, transport="http"),
                                       self.shm_prefix, (self.shm_mode, self.shm_group))
                self._res_final = weakref.finalize(self, self._res.close)  # a client dropped unclosed, or exit
            return self._res

    def _count(self, way):
        with self._lock:
            self.counts[way] += 1

    def is_local(self):
        """True when the daemon shares this machine: a Unix socket, or a loopback address or localhost."""
        local = self.__dict__.get("_is_local")
        if local is None or local[0] != self.base:  # asked on every array sent: parsed once per base
            local = self.__dict__["_is_local"] = (self.base, self._is_local_uncached())
        return local[1]

    def _is_local_uncached(self):
        if self.base.startswith("unix:"):
            return True
        host = urllib.parse.urlsplit(self.base).hostname or ""
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def _transport(self, transport):
        t = self.transport if transport is None else transport
        if t not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {t!r}")
        return t

    # -- plumbing
    def request(self, method, path, body=None, *, query=None, raw=None, content_type=None, accept=None,
                progress=None):
        """One HTTP request; returns (status, headers, body bytes); raises WarpdError on 4xx/5xx."""
        url = self.base + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        headers = {}
        data = None
        if body is not None:
            data = _JSON_ENCODER.encode(body).encode()
            headers["Content-Type"] = "application/json"
        elif raw is not None:
            headers["Content-Type"] = content_type or "application/octet-stream"
            if progress is not None or not isinstance(raw, (bytes, bytearray)):
                data = ProgressReader(raw, progress)
                headers["Content-Length"] = str(len(data))
            else:
                data = bytes(raw)
        if accept:
            headers["Accept"] = accept
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            return self._send(method, url, data, headers)
        except (ConnectionError, TimeoutError, OSError, http.client.HTTPException) as e:
            raise WarpdError(0, "connection_failed", "", f"{self.base}: {e}") from None

    def _connect(self, url):
        """A new connection to the daemon, and the request target to send on it."""
        if self.base.startswith("unix:"):  # unix:/path/warpd.sock, then the request's path and query
            conn = _UnixHTTPConnection(self.base[5:], self.timeout)
            conn.warpd_origin = self.base
            return conn, url[len(self.base):] or "/"
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https"):
            raise WarpdError(0, "bad_url", "", f"{self.base}: only http://, https:// and unix:PATH")
        conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(u.hostname, u.port, timeout=self.timeout)
        conn.warpd_origin = f"{u.scheme}://{u.netloc}"  # what precedes the request target in this URL
        return conn, (u.path or "/") + (f"?{u.query}" if u.query else "")

    def _drop_connection(self):
        conn, self._tls.conn = getattr(self._tls, "conn", None), None
        if conn is not None:
            conn.close()

    def _send(self, method, url, data, headers):
        """Sends on this thread's kept connection (HTTP/1.1 keep-alive: a small request costs no TCP
        handshake), on a new one when there is none, the server closed it, or the body is a stream (which
        cannot be sent twice). A kept connection the server had closed is retried once on a new one.
        Plain HTTP with a body in memory takes _exchange, a lean path of its own; TLS and streamed bodies
        go through http.client."""
        streamed = data is not None and not isinstance(data, (bytes, bytearray))
        for attempt in (0, 1):
            kept = getattr(self._tls, "conn", None)
            if kept is not None and (streamed or not url.startswith(kept.warpd_origin)):
                self._drop_connection()
                kept = None
            if kept is not None:
                conn, target = kept, url[len(kept.warpd_origin):] or "/"  # no URL parsing on a kept connection
            else:
                conn, target = self._connect(url)
            reused = kept is not None
            try:
                if streamed or isinstance(conn, http.client.HTTPSConnection):
                    status, rheaders, payload, closing = self._http_client_exchange(conn, method, target, data,
                                                                                    headers, reused)
                else:
                    status, rheaders, payload, closing = self._exchange(conn, method, target, data, headers,
                                                                        self.spin_us)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._forget(conn, kept)
                if reused and attempt == 0:
                    continue
                raise
            except BaseException:
                self._forget(conn, kept)
                raise
            if closing or status >= 400 or streamed:
                self._forget(conn, kept)
            elif conn is not kept:
                self._tls.conn = conn
            break
        if status >= 400:
            err = {}
            try:
                err = json.loads(payload or b"{}").get("error") or {}
            except (ValueError, AttributeError):
                pass
            raise WarpdError(status, err.get("code") or f"http_{status}", err.get("field") or "",
                             err.get("message") or payload.decode("utf-8", "replace").strip() or f"HTTP {status}")
        return status, rheaders, payload

    def _forget(self, conn, kept):
        if conn is kept:
            self._drop_connection()
        else:
            conn.close()

    @staticmethod
    def _http_client_exchange(conn, method, target, data, headers, reused):
        try:
            conn.request(method, target, body=data, headers=headers)
        except (BrokenPipeError, ConnectionResetError):
            if reused:
                raise
            # The server may answer (404, 413, ...) and close before it has read a large body: its answer
            # is still in the socket, so read it rather than report a broken pipe.
        resp = conn.getresponse()
        payload = resp.read()
        return resp.status, {k.title(): v for k, v in resp.getheaders()}, payload, resp.will_close

    @staticmethod
    def _exchange(conn, method, target, data, headers, spin_us=0):
        """One request and its answer on conn's socket, written and read by hand: one sendall, then the
        status line, the headers and a Content-Length (or chunked) body. http.client's parsing is most of
        a small request's time in Python (a repeated CUDA IPC reduce: issue 22). Returns (status, headers,
        body, whether the server closes the connection)."""
        if conn.sock is None:
            conn.connect()
        host = getattr(conn, "warpd_host_line", None)
        if host is None:  # "Host: ..." once per connection
            name = conn.host if ":" not in conn.host else f"[{conn.host}]"
            host = conn.warpd_host_line = f"Host: {name}:{conn.port}" if conn.port else f"Host: {name}"
        head = f"{method} {target} HTTP/1.1\r\n{host}\r\nAccept-Encoding: identity\r\n"
        for k, v in headers.items():
            head += f"{k}: {v}\r\n"
        if data is not None or method in ("POST", "PUT"):
            head += f"Content-Length: {len(data) if data is not None else 0}\r\n"
        sock = conn.sock
        try:
            sock.sendall((head + "\r\n").encode("latin-1") + (bytes(data) if data else b""))
        except (BrokenPipeError, ConnectionResetError):
            pass  # an answer before the whole body (413, ...) may still be there: read it
        buf = _recv_head(sock, spin_us, conn.timeout)
        end = buf.index(b"\r\n\r\n")
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        body = buf[end + 4:]
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise http.client.BadStatusLine(lines[0]) from None
        rheaders = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            t = _HEADER_NAMES.get(k)
            if t is None:  # a name not seen before: titled, and kept for next time (a few dozen at most)
                t = k.strip().title()
                if len(_HEADER_NAMES) < 256:
                    _HEADER_NAMES[k] = t
            rheaders[t] = v.strip()
        closing = rheaders.get("Connection", "").lower() == "close"

        def more():
            got = sock.recv(1 << 20)
            if not got:
                raise http.client.IncompleteRead(bytes(body))
            return got

        if "chunked" in rheaders.get("Transfer-Encoding", "").lower():
            out, pos = bytearray(), 0
            while True:
                while b"\r\n" not in body[pos:]:
                    body += more()
                eol = body.index(b"\r\n", pos)
                size = int(bytes(body[pos:eol]).split(b";")[0], 16)
                while len(body) < eol + 2 + size + 2:
                    body += more()
                out += body[eol + 2:eol + 2 + size]
                pos = eol + 2 + size + 2
                if size == 0:
                    break
            return status, rheaders, bytes(out), closing
        if "Content-Length" in rheaders:
            n = int(rheaders["Content-Length"])
            while len(body) < n:
                body += more()
            return status, rheaders, bytes(body[:n]), closing
        if method == "HEAD" or status in (204, 304):
            return status, rheaders, b"", closing
        while True:  # no length: the body runs to the connection's end
            got = sock.recv(1 << 20)
            if not got:
                return status, rheaders, bytes(body), True
            body += got

    def _json(self, method, path, body=None, **kw):
        status, headers, payload = self.request(method, path, body, **kw)
        if not payload:
            return {}
        if "json" not in headers.get("Content-Type", "json"):
            return payload
        return json.loads(payload.decode("utf-8"))  # the daemon writes UTF-8 (a str skips json's detection)

    # -- read-only endpoints
    def health(self):
        return self._json("GET", "/v1/health")

    def ready(self):
        return self._json("GET", "/v1/ready")

    def info(self):
        return self._json("GET", "/v1/info")

    def whoami(self):
        """Who this client's token is: {"name", "role" (read|run|admin), "quotas": {name: count or None}}."""
        return self._json("GET", "/v1/whoami")

    def families(self):
        """The list of families (each with types, widths, args, ops, output, backends)."""
        return self._json("GET", "/v1/families")["families"]

    def metrics(self):
        """Prometheus text."""
        return self.request("GET", "/metrics")[2].decode()

    # -- warp primitives and compiling
    @staticmethod
    def _spec(family, type, width, mask, op):
        body = {"family": family}
        for k, v in (("type", type), ("width", width), ("mask", mask), ("op", op)):
            if v is not None:
                body[k] = v
        return body

    def warp(self, family, type=None, width=None, mask=None, op=None, args=None, input=None, active=None,
             backend=None):
        """POST /v1/warp. input: a list (one value or array per lane), {"iota": n}, {"random": n, "seed": s};
        args: e.g. {"lane_mask": 1}, {"src_lane": [..per lane..]}, {"pred": {"op": "gt", "value": 3}};
        active: a hex lane mask or a list of booleans."""
        body = self._spec(family, type, width, mask, op)
        for k, v in (("args", args), ("input", input), ("active", active), ("backend", backend)):
            if v is not None:
                body[k] = v
        return self._json("POST", "/v1/warp", body)

    def compile(self, family, type=None, width=None, mask=None, op=None, ptx=False, source=False, sass=False):
        """POST /v1/compile: key, cache, compile_ms, instantiation, regs, spills, log (+ ptx/source/sass)."""
        body = self._spec(family, type, width, mask, op)
        for k, v in (("ptx", ptx), ("source", source), ("sass", sass)):
            if v:
                body[k] = True
        return self._json("POST", "/v1/compile", body)

    # -- reductions and scans (issue 3)
    def _job_body(self, type, op, data, data_b64, buffer, generate, extra):
        body = {"op": op} if type is None else {"type": type, "op": op}
        given = [k for k, v in (("data", data), ("data_b64", data_b64), ("buffer", buffer), ("generate", generate))
                 if v is not None]
        if len(given) > 1:
            raise ValueError(f"give one of data, data_b64, buffer, generate (got {', '.join(given)})")
        if data is not None:
            body["data"] = list(data)
        if data_b64 is not None:
            body["data_b64"] = data_b64 if isinstance(data_b64, str) else base64.b64encode(data_b64).decode()
        if buffer is not None:
            body["buffer"] = buffer
        if generate is not None:
            body["generate"] = generate
        body.update({k: v for k, v in extra.items() if v is not None})
        return body

    def _run(self, path, type, op, data, data_b64, buffer, generate, raw, progress, accept, extra):
        array_in = _is_array(data) or _is_array(raw)
        if array_in:  # numpy: raw bytes from the array's memory
            view, type = array_bytes(raw if data is None else data, type)
            if any(v is not None for k, v in extra.items() if k not in _RAW_QUERY_FIELDS):
                data, data_b64, raw = None, base64.b64encode(view).decode(), None  # e.g. offsets, weights: JSON
            else:
                data, raw = None, view
        if type is None and buffer is None:
            type = "f32"  # a buffer knows its type
        answer = self._run_once(path, type, op, data, data_b64, buffer, generate, raw, progress, accept, extra)
        self._count("http")
        if array_in and isinstance(answer, dict) and "data_b64" in answer and "data" not in answer:
            answer["data"] = to_array(base64.b64decode(answer["data_b64"]), answer.get("type", type))
        return answer

    def _run_once(self, path, type, op, data, data_b64, buffer, generate, raw, progress, accept, extra):
        if raw is not None:  # raw little-endian bytes (or an open binary file): ?type=&op= on the URL
            query = {"type": type, "op": op, **{k: (json.dumps(v) if isinstance(v, bool) else v)
                                                for k, v in extra.items() if v is not None}}
            status, headers, payload = self.request("POST", path, raw=raw, query=query, progress=progress,
                                                    accept=accept)
        else:
            status, headers, payload = self.request("POST", path, self._job_body(type, op, data, data_b64, buffer,
                                                                                 generate, extra), accept=accept)
        if "json" in headers.get("Content-Type", ""):
            return json.loads(payload)
        return payload

    def _second_input(self, first, data2, buffer2, type, extra):
        """A map over y (map=, op="dot"): the second input into extra as data2 (a list), data2_b64 (a numpy
        array's bytes, or a CuPy array's / CUDA tensor's copied to the host) or buffer2 (an id); the first
        input's type and length (the server answers 400 naming the field otherwise)."""
        if data2 is not None and buffer2 is not None:
            raise ValueError("give one of data2, buffer2")
        if buffer2 is not None:
            extra["buffer2"] = buffer2
            return
        if data2 is None:
            return
        kind = _gpu_kind(data2)
        if kind:
            g = _GpuArray(data2, kind, self._driver)
            data2, type = self._gpu_host(g), type or g.type
        if _is_array(data2):
            if type is None and _is_array(first):
                type = array_bytes(first[:0] if first.ndim else first.reshape(1)[:0], None)[1]
            if type is None and data2.dtype.kind in "iuf" and data2.dtype.name != "float32":
                # the first's type is the server's to say (a list or generate: f32, a buffer: its own): a
                # float32 array goes as bytes (the default type), another as a list read in that type
                wide = data2.dtype.kind in "iu" and data2.dtype.itemsize == 8  # exact past 2^53 as strings
                extra["data2"] = [str(v) for v in data2.reshape(-1).tolist()] if wide else data2.reshape(-1).tolist()
                return
            view, _ = array_bytes(data2, type)
            extra["data2_b64"] = base64.b64encode(view).decode()
        elif isinstance(data2, (bytes, bytearray, memoryview)):
            extra["data2_b64"] = base64.b64encode(bytes(data2)).decode()
        else:
            extra["data2"] = list(data2)

    def dot(self, a, b, type=None, *, full=False, **kw):
        """The dot product of two inputs of one type and length (lists, numpy arrays, CuPy arrays or CUDA
        tensors; or buffer ids with a=None, buffer=..., buffer2=...): POST /v1/reduce with "op": "dot" (map
        x*y, op sum, accumulated like a sum). Returns the value; full=True the whole answer."""
        got = self.reduce(a, type=type, op="dot", data2=b, **kw)
        return got if full else got["value"]

    def reduce(self, data=None, type=None, op="sum", *, data_b64=None, buffer=None, generate=None, raw=None,
               strategy=None, check=None, ddof=None, progress=None, transport=None, map=None, data2=None,
               buffer2=None, **extra):
        """POST /v1/reduce. One of: data (a list, inline JSON; or a numpy array, sent raw; or a CuPy array or
        PyTorch CUDA tensor), data_b64 (bytes or base64 text), buffer (id), generate ({"kind": "random",
        "n": N, "seed": S}), raw (bytes or a binary file, sent as application/octet-stream). type: f32
        unless given (an array's comes from its dtype). transport: how an array goes (see Client; lists,
        bytes and files always go by HTTP). Returns {"value", "count", "backend", "strategy", "key",
        "timing", ...}; for an array in, results that are arrays (segmented_reduce, per-group) also come as
        "data", a numpy array. op may name a statistic or norm: "mean", "var", "std" (ddof=0 or 1, numpy's),
        "norm1", "norm2", "norminf", "count_nonzero": c.reduce(a, op="var", ddof=1)["value"] (docs/api.md).
        map: an expression over x applied to each element first ("x*x", "abs(x)", "x > 0 ? 1 : 0"); over y
        too with a second input data2 (a list or array of the same type and length) or buffer2 (an id);
        op="dot" is map x*y, op sum."""
        if (data is not None and type is None and transport is None and map is None and data2 is None and
                buffer2 is None and raw is None and strategy is None and check is None and ddof is None and
                progress is None and not extra and data_b64 is None and buffer is None and generate is None):
            got = self._ipc_reduce_fast(data, op)  # a GPU array reduced again: the lean path, or None
            if got is not None:
                return got
        t = self._transport(transport)
        extra = dict(strategy=strategy, check=check, ddof=ddof, map=map, **extra)
        x = raw if data is None else data
        self._second_input(x, data2, buffer2, type, extra)
        kind = _gpu_kind(x) if x is not None else None
        if kind:
            return self._gpu_job("/v1/reduce", x, kind, type, op, t, extra, progress)
        if _is_array(x):
            got = self._shm_job("/v1/reduce", x, type, op, t, extra, progress)
            if got is not None:
                return got
        return self._run("/v1/reduce", type, op, data, data_b64, buffer, generate, raw, progress, None, extra)

    def scan(self, data=None, type=None, op="sum", *, data_b64=None, buffer=None, generate=None, raw=None,
             strategy=None, exclusive=None, check=None, raw_out=False, progress=None, transport=None, out=None,
             map=None, data2=None, buffer2=None, **extra):
        """POST /v1/scan; the same inputs as reduce. raw_out=True asks for the scanned data as raw bytes
        (Accept: application/octet-stream) and returns bytes (unpack(b, type) gives the list). A numpy
        array in gives a new numpy array out (flat, of its type; to_array), the answer's other fields
        dropped: through a region it is a copy of what the daemon wrote into a pooled region, so it is the
        caller's. out= (an array of the result's size and type) is filled and returned instead: the daemon
        writes into it directly when it lies in a shared() region. A CuPy array or a CUDA tensor in gives
        one of the same kind, shape and device out (written by the daemon through CUDA IPC, or copied).
        map, data2, buffer2: as reduce's (a scan of squares: map="x*x")."""
        t = self._transport(transport)
        extra = dict(strategy=strategy, exclusive=exclusive, check=check, map=map, **extra)
        x = raw if data is None else data
        self._second_input(x, data2, buffer2, type, extra)
        kind = _gpu_kind(x) if x is not None else None
        if kind:
            return self._gpu_job("/v1/scan", x, kind, type, op, t, extra, progress, scan=True, out=out)
        array_in = _is_array(x)
        if array_in and not raw_out:
            got = self._shm_job("/v1/scan", x, type, op, t, extra, progress, scan=True, out=out)
            if got is not None:
                return got
        if array_in and type is None:
            type = array_bytes(x[:0] if x.ndim else x.reshape(1)[:0], None)[1]  # the dtype's type, no copy
        got = self._run("/v1/scan", type, op, data, data_b64, buffer, generate, raw, progress,
                        "application/octet-stream" if raw_out or array_in else None, extra)
        if array_in and not raw_out and isinstance(got, (bytes, bytearray)):
            got = to_array(got, type or "f32")
            return _fill(out, got) if out is not None else got
        return got

    def reduce_by_key(self, keys, values, op="sum", *, type=None, key_type=None, output=None, **extra):
        """POST /v1/reduce with family reduce_by_key: each run of equal consecutive keys reduced to one value
        with op (CUB's ReduceByKey). keys and values: lists or numpy arrays of one length (an array's type
        comes from its dtype; else values f32 and keys i32 unless type / key_type say), or buffer ids (str).
        Returns (run keys, run values): numpy arrays when numpy is there, else lists. output="buffer":
        the two new buffers' ids instead. Extra fields (block, accumulate, backend, ...) go in the body."""
        def form(x, t, default):
            if isinstance(x, str):
                return {"buffer": x}, t
            if _is_array(x):
                raw, t = array_bytes(x, t)
                return {"type": t, "data_b64": base64.b64encode(raw).decode("ascii")}, t
            t = t or default
            wide = t in ("i64", "u64")  # 64-bit integers travel as strings (exact past 2^53)
            return {"type": t, "data": [str(_number(v, t)) if wide else v for v in x]}, t

        kform, key_type = form(keys, key_type, "i32")
        vform, type = form(values, type, "f32")
        body = {"family": "reduce_by_key", "op": op, "keys": kform, **{k: v for k, v in extra.items() if v is not None}}
        body.update(vform)  # type and data / data_b64, or buffer
        if type:
            body["type"] = type
        body["output"] = output or ("b64" if _np is not None else "json")
        got = self._json("POST", "/v1/reduce", body)
        if output == "buffer":
            return got["keys"]["buffer"], got["data"]["buffer"]
        kt, vt = got["keys_type"], got["type"]
        if "keys_b64" in got:
            return (to_array(base64.b64decode(got["keys_b64"]), kt), to_array(base64.b64decode(got["data_b64"]), vt))
        return ([_number(v, kt) for v in got["keys"]], [_number(v, vt) for v in got["data"]])

    # -- device-resident buffers
    def histogram(self, a=None, bins=10, range=None, *, type=None, buffer=None, generate=None, strategy=None,
                  check=None, answer=False, **extra):
        """numpy's np.histogram(a, bins, range=(lo, hi)) on the daemon (POST /v1/reduce, family histogram):
        equal bins, count for count numpy's. a: a numpy array (sent raw, its type from the dtype) or a list
        (JSON; type f32 unless given); or buffer=ID, or generate={"kind": ..., "n": N}. range is required
        (numpy's default, the data's min and max, would be a pass of its own). Returns (counts, edges) as
        numpy does: counts a uint64 array, edges bins + 1 values of the compare type (float32 for f32,
        float16 for f16, else float64); lists without numpy. answer=True adds the whole answer (in_range,
        out_of_range, backend, timing, ...) as a third item."""
        if range is None:
            raise ValueError("histogram needs range=(lo, hi)")
        lo, hi = (float(v) for v in range)
        fields = {k: v for k, v in dict(strategy=strategy, check=check, **extra).items() if v is not None}
        if _is_array(a):  # raw bytes from the array's memory, the fields as query arguments
            view, t = array_bytes(a, type)
            query = {"family": "histogram", "type": t, "bins": int(bins), "range": f"{lo!r},{hi!r}",
                     **{k: (json.dumps(v) if isinstance(v, bool) else v) for k, v in fields.items()}}
            _, _, payload = self.request("POST", "/v1/reduce", raw=view, query=query)
        else:
            body = {"family": "histogram", "bins": int(bins), "range": [lo, hi], **fields}
            if type is not None or buffer is None:
                body["type"] = type or "f32"
            given = [(k, v) for k, v in (("data", a), ("buffer", buffer), ("generate", generate)) if v is not None]
            if len(given) != 1:
                raise ValueError("give one of a, buffer, generate")
            body[given[0][0]] = list(a) if given[0][0] == "data" else given[0][1]
            _, _, payload = self.request("POST", "/v1/reduce", body)
        self._count("http")
        ans = json.loads(payload)
        counts, edges = [int(c) for c in ans["counts"]], ans["edges"]
        if _np is not None:
            edge_dtype = {"f32": _np.float32, "f16": _np.float16}.get(ans.get("edge_type"), _np.float64)
            counts, edges = _np.array(counts, dtype=_np.uint64), _np.array(edges, dtype=_np.float64).astype(edge_dtype)
        return (counts, edges, ans) if answer else (counts, edges)

    def buffer_put(self, data, type=None, ttl=None, progress=None, transport=None):
        """PUT /v1/buffers: a list (sent as JSON), bytes / a binary file (sent raw) or a numpy array (sent raw
        from its memory, or through a region as reduce's; type from its dtype unless given); a CuPy array
        or CUDA tensor is copied to the host first (ipc_buffer() makes a buffer over it without a copy).
        Returns {"id", ...}."""
        t = self._transport(transport)
        kind = _gpu_kind(data)
        if kind:
            g = _GpuArray(data, kind, self._driver)
            data, type = self._gpu_host(g), type or g.type
        if _is_array(data):
            got = self._shm_job("/v1/buffers", data, type, None, t, {"ttl": ttl}, progress, put=True)
            if got is not None:
                return got
            data, type = array_bytes(data, type)
        if type is None:
            raise ValueError("buffer_put needs type= (i32 u32 i64 u64 f32 f64 f16 bf16) for a list or bytes")
        if isinstance(data, (list, tuple)):
            body = {"type": type, "data": list(data)}
            if ttl is not None:
                body["ttl"] = ttl
            return self._json("PUT", "/v1/buffers", body)
        got = self._json("PUT", "/v1/buffers", raw=data, query={"type": type, "ttl": ttl}, progress=progress)
        self._count("http")
        return got

    # -- shared-memory regions (issue 22): POST/GET/DELETE /v1/shm
    def shm_register(self, name, offset=None, bytes=None):
        """POST /v1/shm: maps an object made elsewhere (shm_open, or a file under /dev/shm) whose name starts
        with the daemon's --shm-prefix. Returns {"id", "name", "offset", "bytes", "registered", ...}."""
        body = {"name": name}
        if offset is not None:
            body["offset"] = offset
        if bytes is not None:
            body["bytes"] = bytes
        return self._json("POST", "/v1/shm", body)

    def shm_regions(self):
        """GET /v1/shm: {"regions": [...], "count", "bytes_mapped", "max_bytes"}."""
        return self._json("GET", "/v1/shm")

    def shm_region(self, region_id):
        return self._json("GET", "/v1/shm/" + urllib.parse.quote(str(region_id), safe=""))

    def shm_delete(self, region_id):
        return self._json("DELETE", "/v1/shm/" + urllib.parse.quote(str(region_id), safe=""))

    def shared(self, shape, dtype="float32", transport=None):
        """A zeroed numpy array (shape: an int or a tuple; dtype: a numpy dtype or a warpd type, "f32")
        living in a shared-memory region this client made and the daemon mapped: reduce, scan (input or
        out=) and buffer_put of it, or of any C-contiguous slice of it, send the region's id, offset and
        count instead of the data. Lifetime: see the module's notes (the region goes when the array and its
        views are garbage-collected, or at close()). With a daemon that is not local (transport "auto") or
        that refuses regions, or with transport "http", it is an ordinary array; transport "shm" raises
        instead. Needs numpy."""
        if _np is None:
            raise RuntimeError("Client.shared needs numpy")
        dt = _numpy_dtype(dtype) if isinstance(dtype, str) and dtype in ELEM_SIZE else _np.dtype(dtype)
        if dt is None or dt.name not in NUMPY_TYPES or not _native(dt):
            raise ValueError(f"dtype {dtype!r} has no warpd type (bf16 needs ml_dtypes)")
        shape = (int(shape),) if isinstance(shape, int) or not hasattr(shape, "__len__") else tuple(shape)
        count = math.prod(shape)
        t = self._transport(transport)
        if t == "http" or (t != "shm" and not self._auto_shm()):
            return _np.zeros(shape, dt)
        try:
            r = self._resources().new_region(max(count * dt.itemsize, 1))
        except WarpdError as e:
            if t != "shm" and self._shm_refusal(e):
                return _np.zeros(shape, dt)
            raise
        except OSError:
            if t == "shm":
                raise
            return _np.zeros(shape, dt)
        base = _np.frombuffer(r.mm, dtype=dt, count=count)  # views of it keep it (numpy's base), not the reshape
        weakref.finalize(base, r.release)
        self._resources().add_shared(r)
        return base.reshape(shape) if len(shape) != 1 else base

    def shm_pool(self):
        """The pooled regions' sizes: {"idle": [bytes...], "lent": [bytes...]} (see shm_trim)."""
        res = self._res
        idle, lent = res.pool.sizes() if res else ([], [])
        return {"idle": idle, "lent": lent}

    def shm_trim(self):
        """Releases the idle pooled regions now (they are made again when needed)."""
        if self._res:
            self._res.pool.trim()

    def _auto_shm(self):
        return _np is not None and self.shm_refused is None and self.is_local()

    def _shm_refusal(self, e):
        """True when "auto" should go by HTTP after e; remembers refusals that will not change."""
        if e.code in _SHM_REFUSALS or _route_missing(e):
            self.shm_refused = f"{e.status} {e.code}"
            return True
        return e.code == "shm_quota"

    def _region_slot(self, arr, type):
        """(region, offset, count, type) when arr lies, C-contiguous and of its own type, in a shared()
        region of this client; else None."""
        res = self._res
        if res is None or not res.shared or not _is_array(arr) or not arr.size:
            return None
        have = NUMPY_TYPES.get(arr.dtype.name)
        if have is None or type not in (None, have) or not arr.flags.c_contiguous or not _native(arr.dtype):
            return None
        addr, nb = arr.__array_interface__["data"][0], arr.nbytes
        for r in res.shared:
            if r.holds(addr, nb) and (addr - r.addr) % arr.itemsize == 0:
                return r, addr - r.addr, arr.size, have
        return None

    def _shm_job(self, path, arr, type, op, t, extra, progress=None, scan=False, out=None, put=False):
        """A numpy array's reduce, scan or buffer_put through a region: the array's own (shared()) or a
        pooled copy. None: go by HTTP instead (transport "http"; "auto" with a small array, a remote
        daemon, or after a refusal)."""
        if t == "http":
            return None
        slot = self._region_slot(arr, type)
        if slot is None and t != "shm":
            want = ELEM_SIZE.get(type or NUMPY_TYPES.get(arr.dtype.name, ""), 0) * arr.size
            if not (self._auto_shm() and want >= SHM_AUTO_MIN_BYTES):
                return None
        try:
            return self._region_job(path, arr, type, op, t, extra, progress, slot, scan, out, put)
        except WarpdError as e:
            if t != "shm" and self._shm_refusal(e):
                return None
            raise
        except OSError:  # making the object: /dev/shm full or missing
            if t == "shm":
                raise
            return None

    def _region_job(self, path, arr, type, op, t, extra, progress, slot, scan, out, put):
        res = self._resources()
        src = None
        if slot:
            region, off, count, type = slot
            nb = count * ELEM_SIZE[type]
        else:
            src, type, count = _typed(arr, type)
            region, off, nb = None, 0, count * ELEM_SIZE[type]
        out_region = out_off = None
        own_out = False  # the result goes to a pooled region, copied out after
        if scan and out is not None:
            oslot = self._region_slot(out, type)
            if oslot and oslot[2] == count:
                out_region, out_off = oslot[0], oslot[1]
        elif scan and (t == "shm" or nb >= SHM_AUTO_MIN_BYTES):
            own_out = True
        leases = []
        try:
            if region is None:  # a pooled region takes the copy (and the result after it, 4 KiB aligned)
                out_at = -(-nb // 4096) * 4096
                region = res.pool.lease(out_at + nb if own_out else max(nb, 1))
                leases.append(region)
                if own_out:
                    out_region, out_off = region, out_at
                _copy_in(region, src, count)
            elif own_out:
                out_region, out_off = res.pool.lease(max(nb, 1)), 0
                leases.append(out_region)
            if put:
                body = {"type": type, **{k: v for k, v in extra.items() if v is not None}}
            else:
                body = {"type": type, "op": op, **{k: v for k, v in extra.items() if v is not None}}
                if not scan and "output" not in body:
                    body["output"] = "b64"  # per-group results as base64 (made a numpy array below)
            accept = "application/octet-stream" if scan and out_region is None else None
            answer = self._region_request("PUT" if put else "POST", path, body, region, off, count, out_region,
                                          out_off, accept)
            self._count("shm")
            if progress:
                progress(nb, nb)
            if put:
                return answer
            if not scan:
                if isinstance(answer, dict) and "data_b64" in answer and "data" not in answer:
                    answer["data"] = to_array(base64.b64decode(answer["data_b64"]), answer.get("type", type))
                return answer
            if out_region is None:  # the scan came back in the answer's body
                got = to_array(answer, type)
                return _fill(out, got) if out is not None else got
            o = answer.get("output", {}).get("shm", {}) if isinstance(answer, dict) else {}
            n_out = int(o.get("count", count))
            if out is not None and not own_out:
                return out  # written in place by the daemon
            dt = _numpy_dtype(type)
            if dt is None:  # bf16 without ml_dtypes: float32 values
                return to_array(out_region.mm[out_off:out_off + n_out * ELEM_SIZE[type]], type)
            got = _np.empty(n_out, dtype=dt)
            _copyto(got, _np.frombuffer(out_region.mm, dtype=dt, count=n_out, offset=out_off))
            return got
        finally:
            for r in leases:
                res.pool.give(r)

    def _region_request(self, method, path, body, region, off, count, out_region, out_off, accept):
        """The request naming the regions' ids; once more after registering them again when the daemon no
        longer knows one (it restarted)."""
        for attempt in (0, 1):
            body["shm"] = {"id": region.id, "offset": off, "count": count}
            if out_region is not None:
                body["output"] = {"shm": {"id": out_region.id, "offset": out_off}}
            try:
                if accept:
                    status, headers, payload = self.request(method, path, body, accept=accept)
                    return json.loads(payload) if "json" in headers.get("Content-Type", "") else payload
                return self._json(method, path, body)
            except WarpdError as e:
                if attempt or not _region_gone(e):
                    raise
                for r in {region, out_region} - {None}:
                    r.register(stale=body["shm"]["id"] if r is region else body["output"]["shm"]["id"])

    # -- CUDA arrays: CUDA IPC (the daemon reads and writes them in place), else a copy to the host
    def _driver(self):
        res = self._resources()
        with res.lock:
            if res.cuda is None:
                res.cuda = _CudaDriver()
            return res.cuda

    def ipc_buffer(self, x):
        """The id of a buffer over CuPy array / CUDA tensor x's memory (PUT /v1/buffers {"cuda_ipc"}, cached
        per allocation, offset, count and type): nothing is copied; x must stay allocated while it is
        used. Waits for the work queued on x's device first."""
        g = _GpuArray(x, _gpu_kind(x) or "cai", self._driver)
        if g.type is None or not g.count:
            raise ValueError("ipc_buffer takes a non-empty CUDA array of a warpd type")
        drv = self._driver()
        with drv.context(g.device):
            drv.synchronize()
            return self._ipc_buffer(g, drv)

    def ipc_release(self):
        """Deletes the cached CUDA IPC buffers (the daemon closes their handles): before freeing the
        memory to the driver (torch.cuda.empty_cache(), a CuPy pool's free_all_blocks())."""
        if self._res:
            self._res.drop_ipc()

    def _ipc_buffer(self, g, drv):
        res = self._resources()
        # The array's allocation by its unique id: seen before, its buffer is reused without asking the
        # driver for the handle again (cuIpcGetMemHandle and cuMemGetAddressRange cost more than the rest)
        seen = (drv.allocation_id(g.ptr), g.device, g.ptr, g.count, g.type)
        with res.lock:
            key = res.ipc_seen.get(seen)
            bid = res.ipc.get(key) if key is not None else None
            if bid is not None:
                res.ipc.move_to_end(key)
                return bid
        spec = _ipc_spec(drv, g)
        key = (spec["handle"], g.device, spec["offset"], g.count, g.type)
        with res.lock:
            res.ipc_seen[seen] = key
            while len(res.ipc_seen) > 4 * IPC_CACHE_MAX:
                res.ipc_seen.pop(next(iter(res.ipc_seen)))
            bid = res.ipc.get(key)
            if bid is not None:
                res.ipc.move_to_end(key)
                return bid
        bid = self._json("PUT", "/v1/buffers", {"type": g.type, "cuda_ipc": spec})["id"]  # the types agree
        drop = []
        with res.lock:
            if key in res.ipc:  # another thread made one meanwhile
                drop.append(bid)
                bid = res.ipc[key]
            else:
                res.ipc[key] = bid
                while len(res.ipc) > IPC_CACHE_MAX:
                    drop.append(res.ipc.popitem(last=False)[1])
        for d in drop:
            res.delete_buffer(d)
        return bid

    def _ipc_forget(self, ids):
        res = self._res
        if res:
            with res.lock:
                for k in [k for k, v in res.ipc.items() if v in ids]:
                    del res.ipc[k]

    def _gpu_job(self, path, x, kind, type, op, t, extra, progress, scan=False, out=None):
        g = _GpuArray(x, kind, self._driver)
        ipc_ok = g.type is not None and type in (None, g.type) and g.count > 0
        if ipc_ok and g.ptr % IPC_ALIGN:  # a slice at an odd offset: an aligned copy on the device (IPC_ALIGN)
            if g.kind == "cai":
                ipc_ok = False
            else:
                g = _GpuArray(g.obj.clone() if g.kind == "torch" else g.obj.copy(), g.kind, self._driver)
        if t == "ipc" and not ipc_ok:
            raise ValueError("transport ipc takes a non-empty CUDA array of a warpd type, without type=")
        if t == "ipc" or (t == "auto" and ipc_ok and self.ipc_refused is None and self.is_local()):
            try:
                return self._ipc_job(path, g, op, extra, scan, out)
            except (WarpdError, CudaError) as e:
                if t == "ipc" or not self._ipc_fallback(e):
                    raise
        # a copy on the host, then as a numpy array (by a pooled region when large and local)
        host = self._gpu_host(g)
        ty = type or g.type
        if not scan:
            return self.reduce(host, type=ty, op=op, progress=progress, transport=t, **extra)
        got = self.scan(host, type=ty, op=op, progress=progress, transport=t, **extra)
        if ty == "bf16" and got.dtype == _np.float32:  # bf16 values without ml_dtypes: back to their bits
            got = _bf16_bits_array(got)
        res = g.from_bytes(got.tobytes())
        return res if out is None else _fill_gpu(g, out, res)

    def _ipc_fallback(self, e):
        """True when "auto" should copy to the host after e; remembers a daemon that takes no IPC."""
        if isinstance(e, CudaError):
            return True  # this allocation has no IPC handle (a VMM or stream-ordered pool), or no driver
        if e.code in _IPC_REFUSALS or _route_missing(e):
            self.ipc_refused = f"{e.status} {e.code}"
            return True
        return e.field.startswith("cuda_ipc")  # bad_handle, bad_device: this array only

    def _ipc_reduce_fast(self, x, op):
        """reduce(x, op) for a CUDA array already made an IPC buffer, once this thread keeps a plain-HTTP or
        Unix-socket connection: the array checked and synchronized as _ipc_job does, then the request (its
        bytes made once per buffer and op) sent through the client's doorbell channel (opened on first
        use; Client channel=), else on the connection, a 200 answer with a Content-Length read with no
        header table (issue 22: a repeated IPC reduce, wall time <= kernel + 100 us; the general path
        costs 20-40 us more in Python, a socket 10-60 us more than a channel). Anything else — no kept
        connection, a transport other than auto or ipc, an array never sent, another status, a closed
        connection — returns None before or after the exchange (a reduce can run twice), and reduce
        takes the general path."""
        conn = getattr(self._tls, "conn", None)
        if conn is None or conn.sock is None or isinstance(conn, http.client.HTTPSConnection) or \
                self.transport not in ("auto", "ipc") or self.ipc_refused is not None or self._res is None or \
                not self.is_local():
            return None
        facts = _lean_facts(x)
        if facts is None or facts[2] is None or facts[0] % IPC_ALIGN:
            return None
        ptr, count, ty, device = facts
        res, drv = self._res, self._res.cuda
        if drv is None:
            return None
        try:  # the framework's writes to x are done before the daemon reads it; the allocation's unique id
            seen = (drv.sync_allocation(device, ptr), device, ptr, count, ty)
        except CudaError:
            return None  # the general path decides (a copy to the host, or the error)
        with res.lock:
            key = res.ipc_seen.get(seen)
            bid = res.ipc.get(key) if key is not None else None
            if bid is not None:
                res.ipc.move_to_end(key)
        if bid is None:
            return None
        host = getattr(conn, "warpd_host_line", None)
        if host is None:
            return None
        rkey = (self.base, self.token, conn.warpd_origin, host, bid, op)
        req, body = self._fast_req.get(rkey, (None, None))
        if req is None:
            url = self.base + "/v1/reduce"
            if not url.startswith(conn.warpd_origin):
                return None
            body = _JSON_ENCODER.encode({"op": op, "buffer": bid}).encode()
            auth = f"Authorization: Bearer {self.token}\r\n" if self.token else ""
            req = (f"POST {url[len(conn.warpd_origin):]} HTTP/1.1\r\n{host}\r\nAccept-Encoding: identity\r\n"
                   f"Content-Type: application/json\r\n{auth}Content-Length: {len(body)}\r\n\r\n").encode() + body
            if len(self._fast_req) >= 4 * IPC_CACHE_MAX:
                self._fast_req.clear()
            self._fast_req[rkey] = (req, body)
        ch = self._channel(res)
        if ch is not None:
            got = ch.call("/v1/reduce", body, self.spin_us, conn.timeout)
            if got is not None:
                if got[0] != 200 or got[2]:
                    return None  # the general path asks again by HTTP and raises the daemon's error
                self._count("ipc")
                return json.loads(got[1])
            if ch.dead:
                res.drop_channel()
        got = self._fast_exchange(conn, req)
        if got is None:
            return None
        self._count("ipc")
        return json.loads(got.decode("utf-8"))

    def _channel(self, res):
        """The client's doorbell channel, opened on first use (None: off, refused, or not for this machine)."""
        if not self.channel or not _channels_usable():
            return None
        ch = res.channel
        if ch is not None:
            return ch
        try:
            return res.open_channel()
        except OSError:  # no region could be made (a full /dev/shm): HTTP, and another try later
            with res.lock:
                res.channel_retry = time.monotonic() + CHANNEL_RETRY_S
            return None

    def _fast_exchange(self, conn, req):
        """One request on conn's socket: the answer's body when it is a 200 with a Content-Length and the
        connection stays open; else None, the connection dropped (an answer half read is never reused)."""
        sock = conn.sock
        try:
            sock.sendall(req)
            buf = _recv_head(sock, self.spin_us, conn.timeout)
            end = buf.index(b"\r\n\r\n")
            head = buf[:end]
            i = head.find(b"\r\nContent-Length:")
            if not head.startswith(b"HTTP/1.1 200 ") or i < 0 or b"\r\nConnection: close" in head:
                raise ValueError("not a plain 200")
            eol = head.find(b"\r\n", i + 2)
            n = int(head[i + 17:eol if eol >= 0 else len(head)])
            body = buf[end + 4:]
            while len(body) < n:
                got = sock.recv(max(65536, n - len(body)))
                if not got:
                    raise http.client.RemoteDisconnected("closed")
                body += got
            if len(body) != n:
                raise ValueError("more than the answer")
            return body
        except (OSError, ValueError, http.client.HTTPException):
            self._drop_connection()
            return None
        except BaseException:  # interrupted (Ctrl-C) mid-exchange: the connection holds half a request
            self._drop_connection()
            raise

    def _ipc_job(self, path, g, op, extra, scan, out):
        drv = self._driver()
        og = None  # a scan's output: out=, or a new array of the input's kind, as an IPC buffer too
        if scan and not self._ipc_no_output:
            og = _GpuArray(out, g.kind, self._driver) if out is not None else None
            if og is not None and (og.count, og.type, og.device) != (g.count, g.type, g.device):
                raise ValueError("out= must be an array of the input's size, type and device")
            if og is None or og.obj is not out or og.ptr % IPC_ALIGN:  # none, strided or misaligned: a new one
                o = g.empty_like()
                og = _GpuArray(o, g.kind, self._driver) if o is not None else None
        remade = False
        while True:
            with drv.context(g.device):
                drv.synchronize()  # the framework's writes to g are done before the daemon reads it
                bid = self._ipc_buffer(g, drv)
                obid = self._ipc_buffer(og, drv) if og is not None else None
            body = {"op": op, "buffer": bid, **{k: v for k, v in extra.items() if v is not None}}
            if obid:
                body["output"] = {"buffer": obid}
            try:
                if scan and obid is None:  # the scan comes back as bytes, made an array of g's kind here
                    payload = self.request("POST", path, body, accept="application/octet-stream")[2]
                    self._count("ipc")
                    got = g.from_bytes(payload)
                    return got if out is None else _fill_gpu(g, out, got)
                answer = self._json("POST", path, body)
                self._count("ipc")
                if not scan:
                    return answer
                return og.obj if out is None or og.obj is out else _fill_gpu(g, out, og.obj)
            except WarpdError as e:
                if obid and e.status == 400 and e.field.split(".")[0] == "output":
                    self._ipc_no_output, og = True, None  # a daemon that writes no output buffer
                    continue
                if remade or e.code != "unknown_buffer":
                    raise
                remade = True  # expired (--buffer-ttl) or deleted: made again, once
                self._ipc_forget({bid, obid})

    def _gpu_host(self, g):
        """A flat numpy copy of GPU array g (bf16: its bits as uint16)."""
        if _np is None:
            raise RuntimeError("copying a CUDA array to the host needs numpy")
        if g.kind == "torch":
            t = g.obj.detach()
            if g.type == "bf16":
                import torch
                return t.view(torch.int16).cpu().numpy().reshape(-1).view(_np.uint16)
            return t.cpu().numpy().reshape(-1)
        if g.kind == "cupy":
            return g.obj.get().reshape(-1)
        dt = _np.dtype(g.obj.__cuda_array_interface__["typestr"])
        host = _np.empty(g.count, dtype=dt)
        if g.count:
            drv = self._driver()
            with drv.context(g.device):
                drv.synchronize()
                drv.copy_to_host(host.ctypes.data, g.ptr, g.nbytes)
        return host

    def buffers(self):
        """GET /v1/buffers: the buffers held."""
        return self._json("GET", "/v1/buffers")

    def buffer(self, buffer_id):
        """GET /v1/buffers/{id}: type, count, bytes, expiry."""
        return self._json("GET", "/v1/buffers/" + urllib.parse.quote(str(buffer_id), safe=""))

    def buffer_delete(self, buffer_id):
        return self._json("DELETE", "/v1/buffers/" + urllib.parse.quote(str(buffer_id), safe=""))

    # -- asynchronous jobs (server/api/api_jobs.c)
    def job_submit(self, kind, request=None):
        """POST /v1/jobs {"kind": "reduce"|"scan"|"warp"|"compile"|..., "request": {that endpoint's body}};
        the server answers 202 {"id", "state": "queued", "location", ...}. A dict as `kind` is sent as is."""
        body = kind if isinstance(kind, dict) else {"kind": kind, "request": request if request is not None else {}}
        return self._json("POST", "/v1/jobs", body)

    def jobs(self, state=None):
        """GET /v1/jobs: the jobs held (optionally only queued|running|done|failed|cancelled), no results."""
        return self._json("GET", "/v1/jobs", query={"state": state} if state else None)

    def job(self, job_id):
        """GET /v1/jobs/{id}: state, progress, times and, once finished, "status" and "result" or "error"."""
        return self._json("GET", "/v1/jobs/" + urllib.parse.quote(str(job_id), safe=""))

    def job_cancel(self, job_id):
        """DELETE /v1/jobs/{id}: cancels a queued or running job, forgets a finished one."""
        return self._json("DELETE", "/v1/jobs/" + urllib.parse.quote(str(job_id), safe=""))

    def job_wait(self, job_id, poll=0.05, timeout=None, progress=None, raise_failed=True):
        """Polls GET /v1/jobs/{id} while it is queued or running, calling progress(fraction, 1.0); returns
        the finished job. A failed job raises its endpoint's error as WarpdError (raise_failed=True)."""
        t0 = time.monotonic()
        while True:
            j = self.job(job_id)
            state = j.get("state", "")
            if progress and isinstance(j.get("progress"), (int, float)):
                progress(1.0 if state == "done" else float(j["progress"]), 1.0)
            if state not in ("queued", "running"):
                err = j.get("error")
                if raise_failed and state == "failed" and isinstance(err, dict):
                    raise WarpdError(j.get("status", 0), err.get("code", "job_failed"), err.get("field", ""),
                                     err.get("message", ""))
                return j
            if timeout is not None and time.monotonic() - t0 > timeout:
                raise TimeoutError(f"job {job_id} still {state} after {timeout} s")
            time.sleep(poll)
            poll = min(poll * 1.5, 1.0)


# ---------------------------------------------------------------- CLI
def _value(text):
    """A CLI value: JSON when it parses (numbers, lists, objects), a comma list of numbers, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if "," in text:
        return [_value(x) for x in text.split(",") if x.strip()]
    return text


def _kv(items):
    out = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep:
            raise SystemExit(f"warpctl: --args wants name=value, got {item!r}")
        out[k.strip()] = _value(v.strip())
    return out


def _print_json(obj):
    print(json.dumps(obj, indent=2))


def _print_warp(r):
    n = r.get("lanes", len(r.get("output", [])))
    print(f"{r.get('family')} {r.get('type')} width {r.get('width')} mask {r.get('mask', '-')} · {n} lanes · "
          f"backend {r.get('backend')} · cache {r.get('cache')}")
    if r.get("key"):
        print(f"key {r['key']}")
    src = r.get("source_lane")
    pred = r.get("pred")
    print(f"{'lane':>5} {'output':>22} " + ("  src" if src else "") + ("  pred" if pred else ""))
    for t in range(n):
        out = r["output"][t]
        text = json.dumps(out) if r["defined"][t] else f"undefined ({r['undefined_reason'][t]})"
        line = f"{t:5d} {text:>22} "
        if src:
            line += f" {'' if src[t] is None else src[t]:>4}"
        if pred:
            line += f"  {pred[t]}"
        print(line.rstrip())
    t = r.get("timing") or {}
    if t:  # a step the server did not time (cuda without "profile") is null: printed as "-"
        print("timing " + " ".join(f"{k}={'-' if v is None else format(v, 'g')}" for k, v in t.items()))


def _data_args(p):
    p.add_argument("file", nargs="?", help="raw little-endian elements ('-' for stdin), sent as octet-stream")
    p.add_argument("--type", default="f32", choices=sorted(ELEM_SIZE))
    p.add_argument("--op", default="sum", help="sum prod min max and or xor, or an expression in a and b; reduce "
                   "also mean var std norm1 norm2 norminf count_nonzero")
    p.add_argument("--ddof", type=int, choices=[0, 1], help="var, std: the divisor is count - ddof (default 0)")
    p.add_argument("--data", help="inline values: 1,2,3 or a JSON list")
    p.add_argument("--b64", action="store_true", help="send FILE as data_b64 inside JSON instead of a raw body")
    p.add_argument("--buffer", help="the id of a buffer uploaded with 'buffers put'")
    p.add_argument("--generate", metavar="KIND:N[:SEED]", help="made on the device: iota:N, random:N:SEED, constant:N")
    p.add_argument("--strategy", help="gmem smem shfl_xor shfl_down redux atomic (default: the fastest)")
    p.add_argument("--check", action="store_true", help="also compute a float64 CPU reference")
    p.add_argument("--map", help="applied to each element first, over x (and y: --data2, --buffer2): x*x, abs(x)")
    p.add_argument("--data2", help="the second input of a map over y (or --op dot): inline values, FILE's length")
    p.add_argument("--buffer2", help="the second input as a buffer id")
    p.add_argument("--async", dest="async_", action="store_true", help="run as an async job, with a progress bar")
    p.add_argument("--progress", action="store_true", help="always show the upload progress bar")
    p.add_argument("--json", action="store_true", help="print the whole JSON answer")


def _generate(text):
    parts = text.split(":")
    g = {"kind": parts[0], "n": int(parts[1]) if len(parts) > 1 else 0}
    if len(parts) > 2:
        g["seed"] = int(parts[2])
    return g


def _run_data(c, kind, a):
    extra = {"strategy": a.strategy, "check": True if a.check else None, "map": a.map}
    if a.ddof is not None:
        extra["ddof"] = a.ddof
    if a.data2 is not None:
        extra["data2"] = _list(a.data2)
    if a.buffer2 is not None:
        extra["buffer2"] = a.buffer2
    if (a.data2 is not None or a.buffer2 is not None) and a.file:
        a.b64 = True  # a raw body has no room for a second input: FILE goes as data_b64
    if kind == "scan":
        if a.exclusive:
            extra["exclusive"] = True
    sources = [x for x in (a.file, a.data, a.buffer, a.generate) if x is not None]
    if len(sources) != 1:
        raise SystemExit(f"warpctl {kind}: give exactly one of FILE, --data, --buffer, --generate")
    fn = c.reduce if kind == "reduce" else c.scan
    if a.async_:
        body = {"type": a.type, "op": a.op, **{k: v for k, v in extra.items() if v is not None}}
        if a.file:
            body["data_b64"] = base64.b64encode(_read_file(a.file)).decode()
        elif a.data:
            body["data"] = _list(a.data)
        elif a.buffer:
            body["buffer"] = a.buffer
        else:
            body["generate"] = _generate(a.generate)
        job = c.job_submit(kind, body)
        print(f"job {job.get('id')} {job.get('state', '')}", file=sys.stderr)
        return c.job_wait(job["id"], progress=progress_bar("job"))
    if a.file:
        if a.b64:
            return fn(data_b64=_read_file(a.file), type=a.type, op=a.op, **extra)
        if a.file == "-":
            return fn(raw=sys.stdin.buffer.read(), type=a.type, op=a.op, **extra)
        size = os.path.getsize(a.file)
        with open(a.file, "rb") as f:
            prog = progress_bar("upload") if (a.progress or size >= PROGRESS_MIN_BYTES) else None
            return fn(raw=f, type=a.type, op=a.op, progress=prog, **extra)
    if a.data:
        return fn(_list(a.data), type=a.type, op=a.op, **extra)
    if a.buffer:
        return fn(buffer=a.buffer, type=a.type, op=a.op, **extra)
    return fn(generate=_generate(a.generate), type=a.type, op=a.op, **extra)


def _list(text):
    v = _value(text)
    return v if isinstance(v, list) else [v]


def _read_file(path):
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="warpctl", description="Client for the warpd daemon ($WARPD, default "
                                 + DEFAULT_URL + "; $WARPD_TOKEN: its token, when it has one).")
    ap.add_argument("--url", default=None, help="daemon base URL (default $WARPD or " + DEFAULT_URL + ")")
    ap.add_argument("--timeout", type=float, default=600.0)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, hlp in (("health", "liveness and readiness"), ("info", "version, backend, device, cache"),
                      ("families", "every kernel family"), ("metrics", "Prometheus text"),
                      ("whoami", "the token's user: name, role and quotas (GET /v1/whoami)")):
        s = sub.add_parser(name, help=hlp)
        if name == "families":
            s.add_argument("--json", action="store_true")

    def spec(s):
        s.add_argument("--family", required=True)
        s.add_argument("--type")
        s.add_argument("--width", type=int)
        s.add_argument("--mask", help="member mask, e.g. 0x0000ffff")
        s.add_argument("--op", help="operator or expression (warp_allreduce, redux)")

    w = sub.add_parser("warp", help="run one warp primitive (POST /v1/warp)")
    spec(w)
    w.add_argument("--args", action="append", metavar="NAME=VALUE",
                   help="run-time argument: lane_mask=1, src_lane=0,1,2..., pred='{\"op\":\"gt\",\"value\":3}'")
    g = w.add_mutually_exclusive_group()
    g.add_argument("--iota", type=int, metavar="N", help="input 0, 1, ..., N-1")
    g.add_argument("--random", type=int, metavar="N", help="N random values (see --seed)")
    g.add_argument("--input", help="values: 1,2,3 or JSON (a list, or a list of per-lane arrays)")
    w.add_argument("--seed", type=int)
    w.add_argument("--elems", type=int, help="elements per lane with --iota/--random")
    w.add_argument("--active", help="active lanes: a hex mask (others return early)")
    w.add_argument("--backend", choices=["cuda", "emu"])
    w.add_argument("--json", action="store_true", help="print the whole JSON answer")

    cp = sub.add_parser("compile", help="compile a spec (POST /v1/compile)")
    spec(cp)
    cp.add_argument("--ptx", action="store_true")
    cp.add_argument("--source", action="store_true")
    cp.add_argument("--sass", action="store_true")
    cp.add_argument("--json", action="store_true")

    r = sub.add_parser("reduce", help="reduce data (POST /v1/reduce)")
    _data_args(r)
    s = sub.add_parser("scan", help="scan data (POST /v1/scan)")
    _data_args(s)
    s.add_argument("--exclusive", action="store_true")
    s.add_argument("--out", help="write the scanned data here as raw little-endian bytes")

    b = sub.add_parser("buffers", help="device-resident buffers (PUT/GET/DELETE /v1/buffers)")
    bs = b.add_subparsers(dest="bcmd", required=True)
    bp = bs.add_parser("put")
    bp.add_argument("file")
    bp.add_argument("--type", default="f32", choices=sorted(ELEM_SIZE))
    bp.add_argument("--ttl", type=float)
    bs.add_parser("list")
    for name in ("get", "delete"):
        bs.add_parser(name).add_argument("id")

    j = sub.add_parser("jobs", help="asynchronous jobs (POST/GET/DELETE /v1/jobs)")
    js = j.add_subparsers(dest="jcmd", required=True)
    jsub = js.add_parser("submit")
    jsub.add_argument("body", help='the job as JSON: {"kind": "reduce", "request": {...}} (\'-\' for stdin)')
    jsub.add_argument("--wait", action="store_true")
    js.add_parser("list").add_argument("--state", choices=["queued", "running", "done", "failed", "cancelled"])
    for name in ("get", "wait", "cancel"):
        js.add_parser(name).add_argument("id")

    sh = sub.add_parser("shm", help="shared-memory regions the daemon has mapped (GET/DELETE /v1/shm)")
    shs = sh.add_subparsers(dest="scmd", required=True)
    shs.add_parser("list")
    for name in ("get", "delete"):
        shs.add_parser(name).add_argument("id")

    a = ap.parse_args(argv)
    c = Client(a.url, timeout=a.timeout)
    try:
        if a.cmd == "health":
            _print_json({"health": c.health(), "ready": c.ready()})
        elif a.cmd == "info":
            _print_json(c.info())
        elif a.cmd == "whoami":
            me = c.whoami()
            print(f"{me['name']} ({me['role']})")
            for k, v in me.get("quotas", {}).items():
                print(f"  {k:<13} {'none' if v is None else v}")
        elif a.cmd == "families":
            fams = c.families()
            if a.json:
                _print_json(fams)
            else:
                for f in fams:
                    print(f"{f['name']:<16} {','.join(f.get('types', [])):<36} {f.get('output', ''):<10} "
                          f"{','.join(f.get('backends', []))}  {f.get('doc', '')}")
        elif a.cmd == "metrics":
            sys.stdout.write(c.metrics())
        elif a.cmd == "warp":
            inp = None
            if a.iota is not None:
                inp = {"iota": a.iota}
            elif a.random is not None:
                inp = {"random": a.random}
                if a.seed is not None:
                    inp["seed"] = a.seed
            elif a.input is not None:
                inp = _list(a.input)
            if isinstance(inp, dict) and a.elems:
                inp["elems"] = a.elems
            res = c.warp(a.family, a.type, a.width, a.mask, a.op, _kv(a.args) or None, inp, a.active, a.backend)
            _print_json(res) if a.json else _print_warp(res)
        elif a.cmd == "compile":
            res = c.compile(a.family, a.type, a.width, a.mask, a.op, a.ptx, a.source, a.sass)
            if a.json:
                _print_json(res)
            else:
                for k in ("key", "cache", "compile_ms", "instantiation", "lowered_name", "regs", "spills",
                          "cubin_bytes", "arch"):
                    if k in res:
                        print(f"{k:>14}: {res[k]}")
                if res.get("log"):
                    print("log:\n" + res["log"].rstrip())
                for k in ("source", "ptx", "sass"):
                    if res.get(k):
                        print(f"----- {k}\n{res[k].rstrip()}")
        elif a.cmd in ("reduce", "scan"):
            res = _run_data(c, a.cmd, a)
            if a.cmd == "scan" and getattr(a, "out", None) and isinstance(res, dict) and "data" in res:
                with open(a.out, "wb") as f:
                    f.write(pack(res["data"], a.type))
                print(f"wrote {len(res['data'])} elements to {a.out}", file=sys.stderr)
            if isinstance(res, (bytes, bytearray)):
                sys.stdout.buffer.write(res)
            elif a.json or a.cmd == "scan" or "value" not in res:
                _print_json(res)
            else:
                extra = " ".join(f"{k}={res[k]}" for k in ("count", "backend", "strategy") if k in res)
                print(f"{res['value']}    ({extra})")
        elif a.cmd == "buffers":
            if a.bcmd == "put":
                size = os.path.getsize(a.file)
                with open(a.file, "rb") as f:
                    _print_json(c.buffer_put(f, a.type, a.ttl, progress=progress_bar("upload")
                                             if size >= PROGRESS_MIN_BYTES else None))
            elif a.bcmd == "list":
                _print_json(c.buffers())
            elif a.bcmd == "get":
                _print_json(c.buffer(a.id))
            else:
                _print_json(c.buffer_delete(a.id))
        elif a.cmd == "jobs":
            if a.jcmd == "submit":
                body = json.loads(_read_file(a.body) if a.body == "-" else a.body)
                job = c.job_submit(body)
                _print_json(c.job_wait(job["id"], progress=progress_bar("job")) if a.wait else job)
            elif a.jcmd == "list":
                _print_json(c.jobs(a.state))
            elif a.jcmd == "get":
                _print_json(c.job(a.id))
            elif a.jcmd == "wait":
                _print_json(c.job_wait(a.id, progress=progress_bar("job")))
            else:
                _print_json(c.job_cancel(a.id))
        elif a.cmd == "shm":
            if a.scmd == "list":
                _print_json(c.shm_regions())
            elif a.scmd == "get":
                _print_json(c.shm_region(a.id))
            else:
                _print_json(c.shm_delete(a.id))
    except (WarpdError, OSError, ValueError) as e:
        for stream in _bars_open:
            stream.write("\n")
        _bars_open.clear()
        print(f"warpctl: error {e}" if isinstance(e, WarpdError) else f"warpctl: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
