#!/usr/bin/env python3
"""Tests of clients/python/warpd's data plane: shared-memory regions (Client.shared, the
pooled regions of transport "auto"/"shm", scan out= into a region, cleanup, the fallback to HTTP) against
a live emu daemon ($WARPD_URL, and $WARPD_URL_NOSHM: one started with --shm off; both set by
tests/clients/python.sh), and the pure parts without one: object names, pool sizes and leases, the
CUDA IPC request (allocation base, offset, handle) and its buffer cache with a stand-in driver and
server. WARPD_EXPECT_NUMPY=0 (numpy hidden): only what needs no numpy runs, and the module must still
import and refuse shared() clearly. Expected values come from the HTTP path (transport="http") or from
numpy, and must match bit for bit."""
import base64
import contextlib
import ctypes
import gc
import hashlib
import json
import os
import subprocess
import sys
import threading
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))  # and for python3 -m warpd (the CLI) below:
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [sys.path[0], os.environ.get("PYTHONPATH")]))
import warpd  # noqa: E402
from warpd import Client, WarpdError  # noqa: E402

URL = os.environ.get("WARPD_URL", "http://127.0.0.1:8080")
URL_NOSHM = os.environ.get("WARPD_URL_NOSHM", "")
EXPECT_NUMPY = os.environ.get("WARPD_EXPECT_NUMPY", "1") == "1"
MINE = f"/warpd-py{os.getpid()}-"  # this process's objects


def dev_shm_mine():
    return sorted("/" + f for f in os.listdir("/dev/shm") if ("/" + f).startswith(MINE))


def daemon_names(c):
    return {r["name"] for r in c.shm_regions()["regions"]}


def client_names(c):
    """The objects of client c: its shared() arrays' regions and its pooled ones."""
    res = c._res
    if res is None:
        return set()
    return {r.name for r in res.shared if not r.dead} | {r.name for r in res.pool._idle + list(res.pool._lent)}


# ---------------------------------------------------------------- pure parts (no daemon, no numpy)
class Names(unittest.TestCase):
    def test_names_are_the_prefix_pid_and_random(self):
        a, b = warpd._shm_name("/warpd"), warpd._shm_name("/warpd")
        self.assertNotEqual(a, b)
        for n in (a, b):
            self.assertTrue(n.startswith(MINE), n)
            self.assertEqual(n.count("/"), 1)
            self.assertLessEqual(len(n), 200)
            self.assertRegex(n, r"^/warpd-py\d+-[0-9a-f]{16}$")
        self.assertTrue(warpd._shm_name("/other").startswith("/other-py"))

    def test_create_maps_and_unlink_removes(self):
        name = warpd._shm_name("/warpd")
        mm = warpd._shm_create(name, 10000)
        try:
            self.assertEqual(os.stat("/dev/shm" + name).st_size, 10000)
            self.assertEqual(os.stat("/dev/shm" + name).st_mode & 0o777, 0o600)
            mm[0:4] = b"abcd"
            with open("/dev/shm" + name, "rb") as f:
                self.assertEqual(f.read(4), b"abcd")  # the same object
            with self.assertRaises(FileExistsError):
                warpd._shm_create(name, 10)  # O_EXCL
        finally:
            mm.close()
            warpd._shm_unlink(name)
        self.assertFalse(os.path.exists("/dev/shm" + name))
        warpd._shm_unlink(name)  # twice: no error


class Pool(unittest.TestCase):
    class FakeRegion:
        def __init__(self, size, log):
            self.size, self.dead, self.log = size, False, log
            log.append(("make", size))

        def release(self):
            if not self.dead:
                self.dead = True
                self.log.append(("release", self.size))

    def pool(self, keep=2):
        log = []
        return warpd._ShmPool(lambda size: self.FakeRegion(size, log), keep=keep), log

    def test_sizes(self):
        for need in (1, 4096, 1 << 20, (1 << 20) + 1, 5 << 20, (1 << 28) + 12, 3 << 30):
            got = warpd._pool_size(need)
            self.assertGreaterEqual(got, need)
            self.assertEqual(got % (1 << 20), 0)
            self.assertLessEqual(got, max(1 << 20, need + need // 8 + (1 << 20)), need)
        self.assertEqual(warpd._pool_size(1 << 28), 1 << 28)  # a power of two is its own size

    def test_reuse_grow_and_keep(self):
        p, log = self.pool(keep=2)
        r1 = p.lease(100)
        p.give(r1)
        self.assertIs(p.lease(1 << 20), r1)  # fits: reused, not made
        p.give(r1)
        r2 = p.lease(3 << 20)  # too small an idle one: a new, larger region
        self.assertIsNot(r2, r1)
        self.assertGreaterEqual(r2.size, 3 << 20)
        a, b = p.lease(10), p.lease(10)  # two at once: two regions
        self.assertIsNot(a, b)
        for r in (r2, a, b):
            p.give(r)
        idle, lent = p.sizes()
        self.assertEqual(len(idle), 2)  # keep=2: the smallest went
        self.assertEqual(lent, [])
        self.assertIn(3 << 20, idle)
        self.assertEqual(sum(1 for e in log if e[0] == "release"), sum(1 for e in log if e[0] == "make") - 2)

    def test_close_releases_idle_and_returned_leases(self):
        p, log = self.pool()
        held = p.lease(10)
        p.give(p.lease(1 << 21))
        p.close()
        self.assertEqual(p.sizes()[0], [])
        self.assertFalse(held.dead)  # still in use by its call
        p.give(held)
        self.assertTrue(held.dead)  # given back after close: released

    def test_threads_never_share_a_region(self):
        p, _ = self.pool(keep=4)
        seen, errors, lock = set(), [], threading.Lock()

        def work():
            for _ in range(200):
                r = p.lease(1000)
                with lock:
                    if id(r) in seen:
                        errors.append("a region lent twice at once")
                    seen.add(id(r))
                with lock:
                    seen.discard(id(r))
                p.give(r)

        ts = [threading.Thread(target=work) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertLessEqual(len(p.sizes()[0]), 4)


class Transport(unittest.TestCase):
    def test_local_daemons(self):
        for url, local in (("http://127.0.0.1:8080", True), ("http://127.1.2.3:1", True), ("http://[::1]:8080", True),
                           ("http://localhost:8080", True), ("unix:/run/warpd.sock", True),
                           ("http://10.0.0.1:8080", False), ("https://gpu.example:443", False)):
            self.assertEqual(Client(url).is_local(), local, url)

    def test_transport_is_checked(self):
        with self.assertRaises(ValueError):
            Client(URL, transport="udp")
        with self.assertRaises(ValueError):
            Client(URL).reduce([1, 2], transport="carrier-pigeon")
        self.assertEqual(Client(URL).transport, "auto")

    def test_remote_daemon_never_sees_shared_regions(self):
        if not EXPECT_NUMPY:
            with self.assertRaises(RuntimeError):
                Client("http://10.255.255.1:9").shared(10)
            return
        c = Client("http://10.255.255.1:9", timeout=0.2)  # nothing asked of it: a plain array
        a = c.shared(10, "f32")
        self.assertEqual((a.shape, a.dtype.name), ((10,), "float32"))
        self.assertIsNone(c._res)


# A stand-in GPU: "device memory" is host memory at a made-up device address; the driver answers from it.
class FakeDriver:
    DEVICE_BASE = 0x7F00_0000_0000

    def __init__(self):
        self.allocs = []  # (device base, size, host bytearray)
        self.syncs, self.contexts = 0, []

    def alloc(self, data):
        base = self.DEVICE_BASE + sum(max(s, 1 << 16) for _, s, _ in self.allocs) * 2
        host = (ctypes.c_char * len(data)).from_buffer_copy(data)
        self.allocs.append((base, len(data), host))
        return base

    @contextlib.contextmanager
    def context(self, device):
        self.contexts.append(device)
        yield

    def synchronize(self):
        self.syncs += 1

    def _find(self, ptr):
        for base, size, host in self.allocs:
            if base <= ptr < base + size:
                return base, size, host
        raise warpd.CudaError(f"cuMemGetAddressRange: CUDA_ERROR_INVALID_VALUE ({ptr:#x})")

    def address_range(self, ptr):
        base, size, _ = self._find(ptr)
        return base, size

    def ipc_handle(self, base):
        return hashlib.sha512(str(base).encode()).digest()  # 64 bytes, one per allocation

    def pointer_device(self, ptr):
        self._find(ptr)
        return 0

    def allocation_id(self, ptr):
        return self._find(ptr)[0]  # one id per allocation

    def copy_to_host(self, dst, ptr, nbytes):
        base, _, host = self._find(ptr)
        ctypes.memmove(dst, ctypes.addressof(host) + (ptr - base), nbytes)


class FakeCudaArray:
    """An object with __cuda_array_interface__ (like a Numba device array) over FakeDriver memory."""

    def __init__(self, ptr, n, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (n,), "typestr": typestr, "version": 3,
                                         "strides": strides}


class GpuArrays(unittest.TestCase):
    def test_kind_by_attributes_without_importing(self):
        class Tensor:
            is_cuda = True
        Tensor.__module__ = "torch"

        class CpuTensor:
            is_cuda = False
        CpuTensor.__module__ = "torch"

        class CupyArray:
            __cuda_array_interface__ = {}
        CupyArray.__module__ = "cupy._core.core"
        self.assertEqual(warpd._gpu_kind(Tensor()), "torch")
        self.assertIsNone(warpd._gpu_kind(CpuTensor()))
        self.assertEqual(warpd._gpu_kind(CupyArray()), "cupy")
        self.assertEqual(warpd._gpu_kind(FakeCudaArray(1, 1)), "cai")
        for x in ([1, 2], b"ab", memoryview(b"ab"), "x", 3, None):
            self.assertIsNone(warpd._gpu_kind(x))
        self.assertNotIn("torch", sys.modules)
        self.assertNotIn("cupy", sys.modules)

    def test_ipc_spec_is_base_handle_and_offset(self):
        drv = FakeDriver()
        base = drv.alloc(bytes(4096))
        g = warpd._GpuArray(FakeCudaArray(base + 256, 100), "cai", lambda: drv)
        self.assertEqual((g.count, g.nbytes, g.type, g.device), (100, 400, "f32", 0))
        spec = warpd._ipc_spec(drv, g)
        self.assertEqual(spec, {"handle": base64.b64encode(drv.ipc_handle(base)).decode(), "device": 0,
                                "offset": 256, "count": 100, "type": "f32"})
        self.assertEqual(len(base64.b64decode(spec["handle"])), 64)
        g64 = warpd._GpuArray(FakeCudaArray(base, 3, "<i8"), "cai", lambda: drv)
        self.assertEqual((g64.type, g64.nbytes, warpd._ipc_spec(drv, g64)["offset"]), ("i64", 24, 0))
        too_long = warpd._GpuArray(FakeCudaArray(base + 4000, 100), "cai", lambda: drv)
        with self.assertRaises(warpd.CudaError):
            warpd._ipc_spec(drv, too_long)  # past the allocation's end
        with self.assertRaises(ValueError):  # strided: not one range of memory
            warpd._GpuArray(FakeCudaArray(base, 10, strides=(8,)), "cai", lambda: drv)
        self.assertIsNotNone(warpd._GpuArray(FakeCudaArray(base, 10, strides=(4,)), "cai", lambda: drv))


class FakeIpcServer(Client):
    """A client whose daemon is a stand-in that takes cuda_ipc buffers: records every request."""

    def __init__(self):
        super().__init__("http://127.0.0.1:9")
        self.log, self.buffers, self.n = [], {}, 0
        self.expire_next_reduce = False
        res = self._resources()
        res.remote, res.cuda = self, FakeDriver()

    def request(self, method, path, body=None, **kw):
        self.log.append((method, path, body))
        if method == "PUT" and path == "/v1/buffers":
            self.n += 1
            bid = f"b-{self.n}"
            self.buffers[bid] = body["cuda_ipc"]
            return 201, {"Content-Type": "application/json"}, json.dumps({"id": bid, "external": "cuda_ipc"}).encode()
        if method == "DELETE" and path.startswith("/v1/buffers/"):
            self.buffers.pop(path.rsplit("/", 1)[1], None)
            return 200, {"Content-Type": "application/json"}, b"{}"
        if method == "POST" and path == "/v1/reduce" and body is None:  # a raw body: the host copy's
            return 200, {"Content-Type": "application/json"}, json.dumps({"value": "host", "count": 1}).encode()
        if method == "POST" and path == "/v1/reduce":
            if self.expire_next_reduce:
                self.expire_next_reduce = False
                self.buffers.clear()
            if body["buffer"] not in self.buffers:
                raise WarpdError(404, "unknown_buffer", "buffer", "expired")
            return 200, {"Content-Type": "application/json"}, json.dumps({"value": 1, "count": 1}).encode()
        raise AssertionError(f"unexpected {method} {path}")

    def puts(self):
        return [b for m, p, b in self.log if m == "PUT"]


class IpcCache(unittest.TestCase):
    def test_one_put_per_array_then_one_post_per_reduce(self):
        c = FakeIpcServer()
        drv = c._res.cuda
        base = drv.alloc(bytes(1 << 16))
        x = FakeCudaArray(base + 4096, 1000)
        for _ in range(5):
            self.assertEqual(c.reduce(x)["value"], 1)
        self.assertEqual(len(c.puts()), 1)
        self.assertEqual(c.puts()[0]["cuda_ipc"]["offset"], 4096)
        self.assertEqual([b["buffer"] for m, p, b in c.log if p == "/v1/reduce"], ["b-1"] * 5)
        self.assertEqual(c.counts["ipc"], 5)
        self.assertEqual(drv.syncs, 5)  # the producer's work is waited for before every use
        c.reduce(FakeCudaArray(base + 8192, 1000))  # another offset: another buffer
        c.reduce(FakeCudaArray(base + 4096, 500))   # another count: another buffer
        self.assertEqual(len(c.puts()), 3)
        c.close()  # every cached buffer deleted
        self.assertEqual(c.buffers, {})
        self.assertEqual(sum(1 for m, p, b in c.log if m == "DELETE"), 3)

    def test_misaligned_start_is_not_sent_by_ipc(self):
        c = FakeIpcServer()
        base = c._res.cuda.alloc(bytes(4096))
        if EXPECT_NUMPY:
            self.assertEqual(c.reduce(FakeCudaArray(base + 4, 10))["value"], "host")  # IPC_ALIGN: copied to the host
        else:
            with self.assertRaises(RuntimeError):  # the host copy needs numpy
                c.reduce(FakeCudaArray(base + 4, 10))
        self.assertEqual(c.puts(), [])
        self.assertEqual(c.reduce(FakeCudaArray(base + 16, 10))["value"], 1)  # aligned: by IPC
        self.assertEqual(len(c.puts()), 1)

    def test_expired_buffer_is_made_again(self):
        c = FakeIpcServer()
        x = FakeCudaArray(c._res.cuda.alloc(bytes(4096)), 1000)
        c.reduce(x)
        c.expire_next_reduce = True  # the daemon forgot it (--buffer-ttl)
        self.assertEqual(c.reduce(x)["value"], 1)
        self.assertEqual(len(c.puts()), 2)

    def test_cache_is_bounded(self):
        c = FakeIpcServer()
        base = c._res.cuda.alloc(bytes(1 << 20))
        for i in range(warpd.IPC_CACHE_MAX + 5):
            c.reduce(FakeCudaArray(base + 16 * i, 10))
        self.assertEqual(len(c._res.ipc), warpd.IPC_CACHE_MAX)
        self.assertEqual(len(c.buffers), warpd.IPC_CACHE_MAX)  # the least recently used were deleted
        c.ipc_release()
        self.assertEqual((len(c._res.ipc), len(c.buffers)), (0, 0))


# ---------------------------------------------------------------- against the daemons
if not EXPECT_NUMPY:

    class WithoutNumpy(unittest.TestCase):
        def test_module_imports_and_shared_needs_numpy(self):
            self.assertIsNone(warpd._np)
            with self.assertRaises(RuntimeError):
                Client(URL).shared(10)
            c = Client(URL, transport="shm")  # lists and bytes go by HTTP whatever the transport
            self.assertEqual(c.reduce([1, 2, 3], type="i32")["value"], 6)
            self.assertEqual(c.scan([1, 2, 3], type="i32")["data"], [1, 3, 6])
            self.assertEqual(c.counts, {"http": 2, "shm": 0, "ipc": 0})
            self.assertIsNone(c._res)  # no region was made

        def test_fake_cuda_array_falls_back_to_the_host_without_numpy_clearly(self):
            c = Client(URL)
            c._resources().cuda = FakeDriver()
            x = FakeCudaArray(c._res.cuda.alloc(bytes(16)), 4)
            with self.assertRaises(RuntimeError):  # the daemon (emu) refuses IPC; the copy needs numpy
                c.reduce(x)
            self.assertEqual(c.ipc_refused, "400 needs_gpu")
            c.close()

else:
    import numpy as np

    DTYPES = ["float32", "float64", "int32", "uint32", "int64", "uint64", "float16"]

    def sample(dtype, n, seed=1):
        rng = np.random.default_rng(seed)
        if dtype.startswith("float"):
            return (rng.standard_normal(n) * 100).astype(dtype)
        return rng.integers(0, 1000, size=n).astype(dtype)

    def same(a, b):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()

    class Shared(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            cls.c = Client(URL)
            cls.h = Client(URL, transport="http")

        @classmethod
        def tearDownClass(cls):
            cls.c.close()

        def test_shared_is_a_registered_zeroed_array(self):
            a = self.c.shared(1000, "f32")
            self.assertIsInstance(a, np.ndarray)
            self.assertEqual((a.shape, a.dtype.name, a.flags.writeable), ((1000,), "float32", True))
            self.assertFalse(a.any())
            r = self.c._region_slot(a, None)[0]
            self.assertIn(r.name, daemon_names(self.c))
            self.assertTrue(os.path.exists("/dev/shm" + r.name))
            self.assertEqual(self.c.shared((4, 5), "int64").shape, (4, 5))
            self.assertEqual(self.c.shared(3, np.float16).dtype, np.float16)
            with self.assertRaises(ValueError):
                self.c.shared(3, "complex64")

        def test_every_dtype_reduces_and_scans_as_over_http(self):
            for dt in DTYPES:
                for n in (1, 1000, (1 << 18) + 3):
                    with self.subTest(dtype=dt, n=n):
                        a = self.c.shared(n, dt)
                        a[:] = sample(dt, n, seed=n)
                        before = self.c.counts["shm"]
                        for op in ("sum", "max"):
                            got, want = self.c.reduce(a, op=op), self.h.reduce(a.copy(), op=op)
                            self.assertEqual(got["value"], want["value"], (dt, n, op))
                            self.assertEqual(got["count"], n)
                        s = self.c.scan(a)
                        self.assertTrue(same(s, self.h.scan(a.copy())), (dt, n))
                        self.assertFalse(np.shares_memory(s, a))
                        self.assertEqual(self.c.counts["shm"] - before, 3)

        def test_slices_go_by_offset(self):
            a = self.c.shared(10000, "i32")
            a[:] = np.arange(10000, dtype=np.int32)
            before = dict(self.c.counts)
            self.assertEqual(self.c.reduce(a[1000:3000])["value"], int(np.arange(1000, 3000).sum()))
            self.assertEqual(self.c.reduce(a.reshape(100, 100)[7])["value"], int(np.arange(700, 800).sum()))
            self.assertTrue(same(self.c.scan(a[5:15]), np.cumsum(np.arange(5, 15), dtype=np.int32)))
            self.assertEqual(self.c.counts["shm"] - before["shm"], 3)
            self.assertEqual(self.c._region_slot(a[1000:3000], None)[1:3], (4000, 2000))
            self.assertIsNone(self.c._region_slot(a[::2], None))  # strided: not one range
            self.assertEqual(self.c.reduce(a[::2])["value"], int(np.arange(0, 10000, 2).sum()))  # still right
            self.assertIsNone(self.c._region_slot(a, "f32"))  # another type: converted, not in place
            self.assertEqual(self.c.reduce(a[:10], type="f32")["value"], 45.0)

        def test_writes_after_registration_are_seen(self):
            a = self.c.shared(1 << 16, "f64")
            self.assertEqual(self.c.reduce(a)["value"], 0.0)
            a[:] = 0.5
            self.assertEqual(self.c.reduce(a)["value"], 32768.0)  # the daemon reads the pages, not a copy
            a[7] = 100
            self.assertEqual(self.c.reduce(a, op="max")["value"], 100.0)

        def test_scan_out_into_a_region(self):
            n = 50000
            a, b = self.c.shared(n, "f32"), self.c.shared(n, "f32")
            a[:] = sample("float32", n, seed=3)
            before = self.c.counts["shm"]
            got = self.c.scan(a, out=b)
            self.assertIs(got, b)
            self.assertEqual(self.c.counts["shm"] - before, 1)
            self.assertTrue(same(b, self.h.scan(a.copy())))
            e = self.c.shared(n, "f32")
            self.assertIs(self.c.scan(a, out=e, exclusive=True), e)
            self.assertTrue(same(e, self.h.scan(a.copy(), exclusive=True)))
            plain = np.empty(n, np.float32)  # not in a region: filled from the answer
            self.assertIs(self.c.scan(a, out=plain), plain)
            self.assertTrue(same(plain, b))
            big = sample("int32", 1 << 19, seed=4)  # 2 MiB ordinary array: pooled region in and out
            self.assertTrue(same(self.c.scan(big), self.h.scan(big)))

        def test_buffer_put_from_a_region(self):
            a = self.c.shared(4096, "u32")
            a[:] = np.arange(4096, dtype=np.uint32)
            before = self.c.counts["shm"]
            b = self.c.buffer_put(a[96:], ttl=60)
            self.assertEqual((b["type"], b["count"]), ("u32", 4000))
            self.assertEqual(self.c.counts["shm"] - before, 1)
            self.assertEqual(self.c.reduce(buffer=b["id"])["value"], int(np.arange(96, 4096).sum()))
            self.c.buffer_delete(b["id"])

        def test_region_lost_by_the_daemon_is_registered_again(self):
            a = self.c.shared(1000, "i64")
            a[:] = 2
            r = self.c._region_slot(a, None)[0]
            old = r.id
            self.c.shm_delete(old)  # behind the client's back (as a restarted daemon would have)
            self.assertEqual(self.c.reduce(a)["value"], self.h.reduce(a.copy())["value"])
            self.assertNotEqual(r.id, old)
            self.assertIn(r.name, daemon_names(self.c))

    class Auto(unittest.TestCase):
        def test_large_arrays_use_a_pooled_region_small_ones_http(self):
            with Client(URL) as c:
                big = sample("float32", warpd.SHM_AUTO_MIN_BYTES // 4, seed=7)
                small = big[:1000].copy()
                want = Client(URL, transport="http").reduce(big)["value"]
                self.assertEqual(c.reduce(big)["value"], want)
                self.assertEqual(c.counts, {"http": 0, "shm": 1, "ipc": 0})
                pooled = client_names(c)
                self.assertEqual(len(pooled), 1)
                self.assertLessEqual(pooled, daemon_names(c))  # the pooled region stays registered for the next call
                self.assertEqual(c.shm_pool()["idle"], [warpd._pool_size(big.nbytes)])
                c.reduce(big)
                self.assertEqual(len(c.shm_pool()["idle"]), 1)  # reused, not made again
                c.reduce(small)
                self.assertEqual(c.counts, {"http": 1, "shm": 2, "ipc": 0})
                c.reduce(big, transport="http")
                self.assertEqual(c.counts["http"], 2)
                c.reduce(small, transport="shm")  # explicit: a region even for a small array
                self.assertEqual(c.counts["shm"], 3)
                b = c.buffer_put(big)
                self.assertEqual(c.counts["shm"], 4)
                self.assertEqual(c.reduce(buffer=b["id"])["value"], want)
                c.buffer_delete(b["id"])
                # a non-contiguous, other-endian or converted array is copied into the region as it should be
                self.assertEqual(c.reduce(big[::-1])["value"], Client(URL, transport="http").reduce(big[::-1])["value"])
                be = big.astype(">f4")
                self.assertEqual(c.reduce(be)["value"], c.reduce(big, transport="http")["value"])
                ints = np.arange(1 << 19, dtype=np.int64) % 1000
                self.assertEqual(c.reduce(ints, type="i32")["value"], int(ints.sum()))
            self.assertIsNone(c._res)

        def test_client_default_transport(self):
            with Client(URL, transport="http") as c:
                self.assertEqual(c.shared(10, "f32").shape, (10,))
                self.assertIsNone(c._res)  # an ordinary array: no region was made
                c.reduce(sample("float32", 1 << 20))
                self.assertEqual(c.counts, {"http": 1, "shm": 0, "ipc": 0})
            with Client(URL, transport="shm") as c:
                c.reduce(np.ones(10, np.float32))
                self.assertEqual(c.counts, {"http": 0, "shm": 1, "ipc": 0})

        def test_threads_share_the_pool(self):
            data = [sample("int32", (1 << 18) + i, seed=i) for i in range(8)]
            want = [int(d.astype(np.int64).sum()) for d in data]
            got, errors = [None] * 8, []
            with Client(URL) as c:
                def work(i):
                    try:
                        for _ in range(3):
                            got[i] = c.reduce(data[i], op="sum")["value"]
                    except Exception as e:  # noqa: BLE001
                        errors.append(e)
                ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                self.assertEqual(errors, [])
                self.assertEqual(c.counts["shm"], 24)
                self.assertLessEqual(len(c.shm_pool()["idle"]), warpd.SHM_POOL_KEEP)
                self.assertEqual(c.shm_pool()["lent"], [])
            self.assertEqual([int(g) for g in got], want)

    class Cleanup(unittest.TestCase):
        def test_close_unregisters_and_unlinks(self):
            c = Client(URL)
            a = c.shared(1000, "f32")
            a[:] = 1
            c.reduce(sample("float32", 1 << 19))  # and a pooled region
            names = client_names(c)
            self.assertEqual(len(names), 2)
            self.assertLessEqual(names, daemon_names(c))
            for n in names:
                self.assertTrue(os.path.exists("/dev/shm" + n), n)
            c.close()
            self.assertFalse(names & daemon_names(Client(URL)))
            for n in names:
                self.assertFalse(os.path.exists("/dev/shm" + n), n)
            self.assertEqual(float(a.sum()), 1000.0)  # still this process's memory
            self.assertEqual(c.reduce(a)["value"], 1000.0)  # now over HTTP
            self.assertEqual(c.counts["http"], 1)
            c.close()

        def test_garbage_collected_array_releases_its_region(self):
            c = Client(URL)
            a = c.shared(1 << 16, "f32")
            view = a[10:20]
            name = c._region_slot(a, None)[0].name
            del a
            gc.collect()
            self.assertIn(name, daemon_names(c))  # a view keeps it
            view[:] = 3
            self.assertEqual(c.reduce(view)["value"], 30.0)
            self.assertEqual(c.counts["shm"], 1)
            del view
            gc.collect()
            self.assertNotIn(name, daemon_names(c))
            self.assertFalse(os.path.exists("/dev/shm" + name))
            c.close()

        def test_with_block_and_nothing_left_behind(self):
            before_daemon = daemon_names(Client(URL))
            before_dev = set(dev_shm_mine())
            with Client(URL) as c:
                kept = c.shared(100, "u64")  # alive past the block: released all the same
                c.scan(sample("float64", 1 << 18), transport="shm")
                made = (daemon_names(c) - before_daemon) | (set(dev_shm_mine()) - before_dev)
                self.assertEqual(len(made), 2)  # the shared() region and a pooled one
            self.assertFalse(made & daemon_names(Client(URL)))
            self.assertFalse(made & set(dev_shm_mine()))
            kept[:] = 5
            self.assertEqual(int(kept.sum()), 500)
            del kept
            gc.collect()

    class Fallback(unittest.TestCase):
        def setUp(self):
            self.assertTrue(URL_NOSHM, "WARPD_URL_NOSHM (a daemon with --shm off) is not set: run tests/clients/python.sh")

        def test_shm_off_daemon_auto_goes_by_http(self):
            before = set(dev_shm_mine())
            with Client(URL_NOSHM) as c:
                a = c.shared(1000, "f32")
                self.assertEqual(c.shm_refused, "403 shm_disabled")
                self.assertIsNone(c._region_slot(a, None))  # an ordinary array
                a[:] = 2
                self.assertEqual(c.reduce(a)["value"], 2000.0)
                big = sample("float32", 1 << 19)
                self.assertEqual(c.reduce(big)["value"], Client(URL, transport="http").reduce(big)["value"])
                self.assertTrue(same(c.scan(big), Client(URL, transport="http").scan(big)))
                self.assertEqual(c.counts, {"http": 3, "shm": 0, "ipc": 0})
            self.assertEqual(set(dev_shm_mine()) - before, set())  # no object was left (or made)

        def test_auto_learns_from_the_first_refusal(self):
            c = Client(URL_NOSHM)
            c.reduce(sample("float32", 1 << 19))
            self.assertEqual(c.shm_refused, "403 shm_disabled")
            posts = []
            orig = c._resources().remote.request

            def spy(method, path, *a, **kw):
                posts.append(path)
                return orig(method, path, *a, **kw)
            c._res.remote.request = spy
            c.reduce(sample("float32", 1 << 19))
            self.assertNotIn("/v1/shm", posts)  # not asked again
            c.close()

        def test_explicit_shm_raises(self):
            c = Client(URL_NOSHM, transport="shm")
            with self.assertRaises(WarpdError) as e:
                c.shared(10)
            self.assertEqual((e.exception.status, e.exception.code), (403, "shm_disabled"))
            with self.assertRaises(WarpdError) as e:
                Client(URL_NOSHM).reduce(np.ones(10, np.float32), transport="shm")
            self.assertEqual(e.exception.code, "shm_disabled")
            c.close()

        def test_the_daemon_refuses_a_name_outside_its_prefix(self):
            c = Client(URL, shm_prefix="/notwarpd")
            a = c.shared(10, "f32")  # "auto": refused (400 bad_name), remembered, an ordinary array
            self.assertEqual(c.shm_refused, "400 bad_name")
            self.assertIsNone(c._region_slot(a, None))
            self.assertFalse([n for n in os.listdir("/dev/shm") if n.startswith(f"notwarpd-py{os.getpid()}-")])
            c.close()

    class FakeGpu(unittest.TestCase):
        """A __cuda_array_interface__ array on a stand-in driver against the emu daemon, which refuses
        CUDA IPC (400 needs_gpu): "auto" copies to the host, "ipc" raises."""

        def test_auto_falls_back_to_a_host_copy(self):
            c = Client(URL)
            drv = c._resources().cuda = FakeDriver()
            host = sample("float32", 5000, seed=9)
            x = FakeCudaArray(drv.alloc(host.tobytes()) + 0, 5000)
            bodies = []
            orig = c.request

            def spy(method, path, body=None, **kw):
                bodies.append((method, path, body))
                return orig(method, path, body, **kw)
            c.request = spy
            self.assertEqual(c.reduce(x)["value"], Client(URL, transport="http").reduce(host)["value"])
            put = [b for m, p, b in bodies if m == "PUT"][0]
            self.assertEqual(put["cuda_ipc"]["handle"], base64.b64encode(drv.ipc_handle(drv.allocs[0][0])).decode())
            self.assertEqual((put["cuda_ipc"]["offset"], put["cuda_ipc"]["count"], put["cuda_ipc"]["type"]),
                             (0, 5000, "f32"))
            self.assertEqual(c.ipc_refused, "400 needs_gpu")
            self.assertEqual(c.counts["ipc"], 0)
            bodies.clear()
            got = c.scan(x)  # no framework to build a device array: a numpy array comes back
            self.assertTrue(same(got, Client(URL, transport="http").scan(host)))
            self.assertFalse([b for m, p, b in bodies if m == "PUT"])  # not tried again
            with self.assertRaises(WarpdError) as e:
                c.reduce(x, transport="ipc")
            self.assertEqual(e.exception.code, "needs_gpu")
            c.close()

    class Cli(unittest.TestCase):
        def test_warpctl_shm_list(self):
            with Client(URL) as c:
                a = c.shared(10, "f32")
                name = c._region_slot(a, None)[0].name
                p = subprocess.run([sys.executable, "-m", "warpd", "--url", URL, "shm", "list"], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(name, {r["name"] for r in json.loads(p.stdout)["regions"]})
                p = subprocess.run([sys.executable, "-m", "warpd", "--url", URL, "shm", "get", "shm-0000000000000000"],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 1)
                self.assertIn("warpctl: error 404", p.stderr)


if __name__ == "__main__":
    unittest.main()
