"""shm.py — shared-memory regions (the data plane): our POSIX objects (made, mapped, registered with POST /v1/shm,
released), the pool of regions that take copies of ordinary numpy arrays, and the Client's methods that
send an array through a region rather than over HTTP (shm_*, shared(), the "shm" and "auto" transports)."""
import base64
import ctypes
import json
import math
import mmap
import os
import secrets
import threading
import urllib.parse
import weakref

from .arrays import (ELEM_SIZE, NUMPY_TYPES, _copy_in, _copyto, _fill, _is_array, _native, _np, _numpy_dtype,
                     _typed, to_array)
from .errors import _SHM_REFUSALS, WarpdError, _region_gone, _route_missing

SHM_AUTO_MIN_BYTES = 1 << 20  # transport "auto": a numpy array this large goes through a pooled region
SHM_POOL_KEEP = 2             # idle pooled regions a client keeps for the next calls (more are freed)


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


class _SharedMemory:
    """The Client's shared-memory methods (a mixin of Client: it uses request, _json, _resources, _count,
    is_local and _transport)."""

    # -- shared-memory regions: POST/GET/DELETE /v1/shm
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
