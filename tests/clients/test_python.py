#!/usr/bin/env python3
"""Tests of clients/python/warpd (the package): against a live daemon ($WARPD_URL, set by tests/clients/run.sh; when unset
this module starts build/warpd itself), plus request-shape tests against a small recording HTTP stub for the
data routes (reduce, scan, buffers, jobs), so the client is checked even before the server has them.
Expected values come from formulas here. Standard library only."""
import base64
import contextlib
import http.server
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import unittest.mock

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))  # and for CLI, python3 -m warpd:
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [sys.path[0], os.environ.get("PYTHONPATH")]))
import warpd  # noqa: E402
from warpd import Client, WarpdError, pack, unpack  # noqa: E402

CLI = [sys.executable, "-m", "warpd"]
_daemon = None
_tmp = None
URL = os.environ.get("WARPD_URL")


def setUpModule():
    global _daemon, _tmp, URL
    if URL:
        return
    _tmp = tempfile.mkdtemp(prefix="warpd-py-")
    binary = os.path.join(ROOT, os.environ.get("BUILD", "build"), "warpd")
    _daemon = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--backend", "emu", "--cache-dir",
                                os.path.join(_tmp, "cache")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = _daemon.stdout.readline()
    m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    if not m:
        raise RuntimeError(f"the daemon did not start: {line!r}")
    URL = m.group(1)


def tearDownModule():
    if _daemon:
        _daemon.terminate()
        _daemon.wait(10)
        shutil.rmtree(_tmp, ignore_errors=True)


def route_missing(client, method, path):
    """True when the server has no such route yet (404/405 for it)."""
    try:
        client.request(method, path, {} if method != "GET" else None)
    except WarpdError as e:
        return e.status in (404, 405) and e.code in ("not_found", "method_not_allowed")
    return False


# ---------------------------------------------------------------- live daemon: histogram
class LiveHistogram(unittest.TestCase):
    """c.histogram(a, bins, range) returns numpy's (counts, edges), with numpy or without it."""

    def setUp(self):
        self.c = Client(URL)

    def tearDown(self):
        self.c.close()

    def test_list_input(self):
        counts, edges, ans = self.c.histogram([0, 0.1, 0.25, 0.5, 0.99, 1, 1.5, -0.0], 4, (0, 1), answer=True)
        self.assertEqual([int(c) for c in counts], [3, 1, 1, 2])  # 0.25 opens bin 1; 1 closes the last
        self.assertEqual([float(e) for e in edges], [0, 0.25, 0.5, 0.75, 1])
        self.assertEqual((ans["in_range"], ans["out_of_range"]), ("7", "1"))

    def test_like_numpy(self):
        try:
            import numpy as np
        except ImportError:
            return  # without numpy: test_list_input is the check
        e = np.linspace(0.1, 0.7, 257).astype(np.float32)
        x = np.concatenate([e, np.nextafter(e, np.float32(2)), np.nextafter(e, np.float32(-2)),
                            np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], np.float32)])
        counts, edges = self.c.histogram(x, 256, (0.1, 0.7))
        want_counts, want_edges = np.histogram(x, 256, range=(0.1, 0.7))
        self.assertEqual(counts.dtype, np.uint64)
        self.assertTrue(np.array_equal(counts, want_counts))
        self.assertTrue(np.array_equal(edges, want_edges))

    def test_errors_name_the_field(self):
        c = self.c
        with self.assertRaises(WarpdError) as e:
            c.histogram([1.0], 0, (0, 1))
        self.assertEqual(e.exception.field, "bins")
        with self.assertRaises(WarpdError) as e:
            c.histogram([1.0], 4, (1, 1))
        self.assertEqual(e.exception.field, "range")
        with self.assertRaises(ValueError):
            c.histogram([1.0], 4)


# ---------------------------------------------------------------- the socket poll before recv (Client spin_us)
class SpinRecv(unittest.TestCase):
    """_spin_recv gives what arrives within spin_us, else b"" (the caller then sleeps in recv), raises when
    the peer closed, and puts the socket's timeout back."""

    def test_spin(self):
        import http.client
        import socket
        a, b = socket.socketpair()
        with a, b:
            a.settimeout(5.0)
            self.assertEqual(warpd._spin_recv(a, 300, 5.0), b"")
            self.assertEqual(a.gettimeout(), 5.0)
            b.sendall(b"HTTP/1.1 200 OK\r\n")
            self.assertEqual(warpd._spin_recv(a, 2_000_000, 5.0), b"HTTP/1.1 200 OK\r\n")
            b.close()
            with self.assertRaises(http.client.RemoteDisconnected):
                warpd._spin_recv(a, 2_000_000, 5.0)
            self.assertEqual(a.gettimeout(), 5.0)


class LiveLeanIpc(unittest.TestCase):
    """Client._ipc_reduce_fast, the lean path of a repeated CUDA IPC reduce (the data plane), against the live
    daemon without a GPU: a stand-in array (its "IPC buffer" a buffer put on the daemon, the driver's calls
    recorded) takes it once the general path has kept the connection; a 404 (the buffer gone), another
    transport, keyword arguments and a closed connection take the general path, with the same answers."""

    class _Drv:
        def __init__(self):
            self.calls = []

        def sync_allocation(self, device, ptr):
            self.calls.append(("sync_allocation", device, ptr))
            return 77

    @staticmethod
    def _facts(x):  # what _lean_facts reads of a CUDA array: (ptr, count, type, device)
        return (1 << 20, 4, "f32", 0) if x == "gpu" else None

    channel = False  # the HTTP form of the lean path (LiveChannel: the doorbell's)

    def setUp(self):
        self.c = Client(URL, channel=self.channel)
        self.bid = self.c.buffer_put([1.5, 2.5, 3.5, 4.5], type="f32")["id"]
        self.drv = self._Drv()
        res = self.c._resources()
        res.cuda = self.drv
        seen = (77, 0, 1 << 20, 4, "f32")
        res.ipc_seen[seen] = ("handle", 0, 0, 4, "f32")
        res.ipc[res.ipc_seen[seen]] = self.bid
        self.c.health()  # the general path: this thread's connection is kept
        patches = [unittest.mock.patch.object(warpd, "_lean_facts", self._facts)]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        self.addCleanup(self.c.close)

    def test_lean_answer(self):
        got = self.c._ipc_reduce_fast("gpu", "sum")
        self.assertIsNotNone(got)
        self.assertEqual((got["value"], got["count"]), (12, 4))
        self.assertEqual(self.drv.calls, [("sync_allocation", 0, 1 << 20)])
        self.assertEqual(self.c._ipc_reduce_fast("gpu", "max")["value"], 4.5)
        self.assertEqual(self.c.counts["ipc"], 2)
        self.assertIsNotNone(self.c._tls.conn)  # still kept
        self.assertIsNone(self.c._ipc_reduce_fast([1, 2], "sum"))  # not a GPU array

    def test_interrupted(self):  # Ctrl-C mid-exchange: raised, and the half-used connection is not kept
        with unittest.mock.patch.object(warpd, "_recv_head", side_effect=KeyboardInterrupt):
            with self.assertRaises(KeyboardInterrupt):
                self.c._ipc_reduce_fast("gpu", "sum")
        self.assertIsNone(getattr(self.c._tls, "conn", None))
        self.assertEqual(self.c.reduce([1, 2, 3], type="f32")["value"], 6)  # a new connection answers

    def test_driver_error(self):  # the driver refuses the array: the general path decides
        def refuse(device, ptr):
            raise warpd.CudaError("cuPointerGetAttribute failed")
        self.drv.sync_allocation = refuse
        self.assertIsNone(self.c._ipc_reduce_fast("gpu", "sum"))
        self.assertIsNotNone(self.c._tls.conn)  # nothing was sent

    def test_token_in_request(self):  # the request's bytes follow the token in use
        self.assertIsNotNone(self.c._ipc_reduce_fast("gpu", "sum"))
        self.c.token = "t0ken"
        got = []
        orig = self.c._fast_exchange
        self.c._fast_exchange = lambda conn, req: got.append(req) or orig(conn, req)
        self.c._ipc_reduce_fast("gpu", "sum")
        self.assertIn(b"Authorization: Bearer t0ken\r\n", got[0])

    def test_through_reduce(self):  # Client.reduce takes the lean path once the buffer is known
        self.assertEqual(self.c.reduce("gpu")["value"], 12)
        self.assertEqual(self.c.counts["ipc"], 1)
        self.assertEqual(len(self.drv.calls), 1)

    def test_falls_back(self):
        self.assertIsNone(self.c._ipc_reduce_fast("gpu", "no_such_op"))  # 400: the general path answers it
        self.assertIsNone(getattr(self.c._tls, "conn", None))  # the connection dropped after a non-200
        self.assertIsNone(self.c._ipc_reduce_fast("gpu", "sum"))  # no kept connection: nothing sent
        self.c.health()
        self.c.buffer_delete(self.bid)
        self.assertIsNone(self.c._ipc_reduce_fast("gpu", "sum"))  # 404 unknown_buffer
        self.c.health()
        self.c._tls.conn.sock.close()
        self.assertIsNone(self.c._ipc_reduce_fast("gpu", "sum"))  # a closed socket
        http_only = Client(URL, transport="http")
        self.addCleanup(http_only.close)
        http_only._res = self.c._res
        http_only.health()
        self.assertIsNone(http_only._ipc_reduce_fast("gpu", "sum"))


class LiveChannel(LiveLeanIpc):
    """The lean path through a doorbell channel (POST /v1/channels, engine/channels.h): the same answers
    as HTTP, one channel per client, deleted at close(); a channel closed under the client, a busy one,
    an error answer and a daemon that gives none take HTTP. The HTTP-only cases of LiveLeanIpc are
    overridden where the channel changes what they look at."""
    channel = True

    def _channels(self):
        return self.c._res.remote._json("GET", "/v1/channels")["channels"]

    def test_lean_answer(self):
        http = Client(URL, channel=False)
        self.addCleanup(http.close)
        want = {op: http.reduce(buffer=self.bid, op=op) for op in ("sum", "max", "min")}
        for op in ("sum", "max", "min", "sum"):
            got = self.c._ipc_reduce_fast("gpu", op)
            self.assertIsNotNone(got)
            for k in ("value", "count", "type", "family", "hash"):
                self.assertEqual(got[k], want[op][k], (op, k))
        ch = self.c._res.channel
        self.assertIsNotNone(ch)
        mine = [x for x in self._channels() if x["id"] == ch.id]
        self.assertEqual((len(mine), mine[0]["requests"]), (1, 4))
        self.assertEqual(mine[0]["shm"]["id"], ch.region.id)
        self.assertEqual(self.c.counts["ipc"], 4)

    def test_interrupted(self):  # nothing of HTTP is used: the channel answers
        self.assertIsNotNone(self.c._ipc_reduce_fast("gpu", "sum"))  # the channel opened (by HTTP)
        with unittest.mock.patch.object(warpd, "_recv_head", side_effect=KeyboardInterrupt):
            self.assertEqual(self.c._ipc_reduce_fast("gpu", "sum")["value"], 12)

    def test_token_in_request(self):  # a channel carries the authority of the request that opened it
        self.assertIsNotNone(self.c._ipc_reduce_fast("gpu", "sum"))
        self.assertIsNotNone(self.c._res.channel)

    def test_falls_back(self):
        self.assertIsNone(self.c._ipc_reduce_fast("gpu", "no_such_op"))  # 400 on the channel: the general path
        with self.assertRaises(WarpdError) as e:
            self.c.reduce(buffer=self.bid, op="no_such_op")
        self.assertEqual(e.exception.code, "bad_op")
        self.c.buffer_delete(self.bid)
        self.assertIsNone(self.c._ipc_reduce_fast("gpu", "sum"))  # 404 unknown_buffer

    def test_channel_deleted_under_it(self):  # DELETE /v1/channels/{id}: HTTP answers, then a new channel
        self.assertIsNotNone(self.c._ipc_reduce_fast("gpu", "sum"))
        old = self.c._res.channel
        self.c._res.remote._json("DELETE", "/v1/channels/" + old.id)
        t0 = time.monotonic()
        self.assertEqual(self.c._ipc_reduce_fast("gpu", "sum")["value"], 12)  # by HTTP, within about 50 ms
        self.assertLess(time.monotonic() - t0, 0.9)
        self.assertTrue(old.dead)
        self.assertIsNone(self.c._res.channel)
        self.assertEqual(self.c._ipc_reduce_fast("gpu", "max")["value"], 4.5)
        self.assertIsNot(self.c._res.channel, old)
        self.assertIn(self.c._res.channel.id, [x["id"] for x in self._channels()])

    def test_busy_goes_by_http(self):  # another thread holds the channel: this call takes HTTP
        self.assertIsNotNone(self.c._ipc_reduce_fast("gpu", "sum"))
        ch = self.c._res.channel
        with ch.lock:
            self.assertEqual(self.c._ipc_reduce_fast("gpu", "sum")["value"], 12)
        self.assertEqual([x["requests"] for x in self._channels() if x["id"] == ch.id], [1])

    def test_close_deletes(self):
        self.assertIsNotNone(self.c._ipc_reduce_fast("gpu", "sum"))
        ch = self.c._res.channel
        remote = self.c._res.remote
        self.c.close()
        ids = [x["id"] for x in remote._json("GET", "/v1/channels")["channels"]]
        self.assertNotIn(ch.id, ids)
        self.assertNotIn(ch.region.id, [x["id"] for x in remote._json("GET", "/v1/shm")["regions"]])

    def test_taken_then_gone(self):  # the daemon took the request, then went away: back to HTTP within ~1 s
        self.assertIsNotNone(self.c._ipc_reduce_fast("gpu", "sum"))
        ch = self.c._res.channel
        seq = (ch.seq + 1) & 0xFFFFFFFF
        ch.words[warpd._CH_TAKEN >> 2] = seq  # as if taken; no answer will come
        with unittest.mock.patch.object(ch, "alive", return_value=False):
            t0 = time.monotonic()
            self.assertFalse(ch._wait(seq, 0, 30))
            self.assertLess(time.monotonic() - t0, 2.5)

    def test_refusals(self):  # a daemon that will never give one is not asked again; a full one later
        res = self.c._res
        res._channel_refused(WarpdError(429, "too_many_channels"))
        self.assertIsNone(res.channel_refused)
        self.assertGreater(res.channel_retry, time.monotonic() + 10)
        self.assertIsNone(res.open_channel())  # not asked before the retry time
        res.channel_retry = 0.0
        res._channel_refused(WarpdError(403, "channels_disabled"))
        self.assertEqual(res.channel_refused, "403 channels_disabled")

    def test_threads(self):  # four threads share the client: every answer right, HTTP or channel
        errors = []

        def run():
            for _ in range(50):
                got = self.c._ipc_reduce_fast("gpu", "sum")
                if got is not None and got["value"] != 12:
                    errors.append(got)
        ts = [threading.Thread(target=run) for _ in range(4)]
        self.c._ipc_reduce_fast("gpu", "sum")
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])


# ---------------------------------------------------------------- live daemon: core endpoints
class LiveCore(unittest.TestCase):
    def setUp(self):
        self.c = Client(URL)

    def test_health_ready_info(self):
        self.assertEqual(self.c.health(), {"status": "ok"})
        self.assertEqual(self.c.ready()["status"], "ready")
        info = self.c.info()
        self.assertEqual(info["name"], "warpd")
        self.assertIn(info["backend"], ("emu", "cuda"))
        self.assertIn("version", info["nvrtc"])
        self.assertEqual(info["limits"]["max_lanes"], 1024)

    def test_whoami(self):  # no token on loopback: everyone is the admin "default"
        me = self.c.whoami()
        self.assertEqual((me["name"], me["role"]), ("default", "admin"))
        self.assertEqual(set(me["quotas"]), {"buffer_bytes", "shm_bytes", "jobs", "channels", "rate"})

    def test_spin_or_not_same_answer(self):
        for spin in (0, warpd.SPIN_US):  # polling the socket first (the default) or sleeping in recv at once
            c = Client(URL, spin_us=spin)
            self.assertEqual(c.reduce([1, 2, 3.5])["value"], 6.5)
            self.assertEqual(c.health(), {"status": "ok"})
            c.close()

    def test_reduce_by_key(self):
        keys, vals = self.c.reduce_by_key([1, 1, 2, 2, 2, 1], [1, 2, 3, 4, 5, 6])  # f32 sums over i32 keys
        self.assertEqual(([int(k) for k in keys], [float(v) for v in vals]), ([1, 2, 1], [3.0, 12.0, 6.0]))
        keys, vals = self.c.reduce_by_key([2**60, 2**60, 5], [-3, 4, 9], op="min", type="i64", key_type="u64")
        self.assertEqual(([int(k) for k in keys], [int(v) for v in vals]), ([2**60, 5], [-3, 9]))
        keys, vals = self.c.reduce_by_key([], [])
        self.assertEqual((len(keys), len(vals)), (0, 0))
        kb, vb = self.c.reduce_by_key([4, 4, 5], [1, 2, 3], output="buffer")
        self.assertTrue(kb.startswith("b-") and vb.startswith("b-"))
        with self.assertRaises(WarpdError) as e:
            self.c.reduce_by_key([1, 2, 3], [1.0, 2.0])
        self.assertEqual((e.exception.status, e.exception.code, e.exception.field), (400, "bad_length", "keys"))

    def test_families(self):
        fams = self.c.families()
        names = [f["name"] for f in fams]
        for n in ("shfl", "shfl_up", "shfl_down", "shfl_xor", "ballot", "warp_allreduce"):
            self.assertIn(n, names)
        xor = next(f for f in fams if f["name"] == "shfl_xor")
        self.assertEqual(xor["args"][0]["name"], "lane_mask")

    def test_warp_readme_example(self):
        r = self.c.warp("shfl_xor", type="i32", width=16, mask="0xffffffff", args={"lane_mask": 1}, input={"iota": 32})
        self.assertEqual(r["output"], [i ^ 1 for i in range(32)])
        self.assertEqual(r["source_lane"], [i ^ 1 for i in range(32)])
        self.assertEqual(r["defined"], [True] * 32)
        self.assertEqual(r["key"], "shfl_xor/i32/w16/m0xffffffff/sm_90")
        self.assertIn(r["cache"], ("memory", "disk", "compile"))
        self.assertIn("kernel_us", r["timing"])

    def test_warp_per_lane_args_active_and_undefined(self):
        r = self.c.warp("shfl", args={"src_lane": [(i + 2) % 32 for i in range(32)]}, input=list(range(100, 132)),
                        active="0xfffffffe")
        for i in range(32):
            src = (i + 2) % 32
            if i == 0:
                self.assertEqual(r["undefined_reason"][i], "inactive")
            elif src == 0:
                self.assertEqual(r["undefined_reason"][i], "src_inactive")
            else:
                self.assertEqual(r["output"][i], 100 + src)

    def test_warp_64_bit_and_arrays(self):
        r = self.c.warp("shfl_xor", type="u64", args={"lane_mask": 1}, input=[str(2**64 - 1 - i) for i in range(32)])
        self.assertEqual(r["output"][0], str(2**64 - 2))
        r = self.c.warp("shfl_down", args={"delta": 1}, input=[[i, 10 * i] for i in range(32)])
        self.assertEqual(r["output"][3], [4, 40])

    def test_warp_errors_carry_code_and_field(self):
        with self.assertRaises(WarpdError) as cm:
            self.c.warp("shfl", width=12)
        e = cm.exception
        self.assertEqual((e.status, e.code, e.field), (400, "bad_width", "width"))
        self.assertIn("power of two", e.message)
        with self.assertRaises(WarpdError) as cm:
            self.c.warp("shfl_up", args={"delta": 40})
        self.assertEqual((cm.exception.code, cm.exception.field), ("out_of_range", "args.delta"))
        with self.assertRaises(WarpdError) as cm:
            self.c.warp("shuffle")
        self.assertEqual(cm.exception.code, "unknown_family")

    def test_compile(self):
        r = self.c.compile("warp_allreduce", type="f32", width=16, op="max", ptx=True, source=True)
        self.assertEqual(r["key"], "warp_allreduce/f32/w16/m0xffffffff/op=max/sm_90")
        self.assertEqual(r["instantiation"], "wp_warp_allreduce<float, 16, 0xffffffffu, wp_op_max<float> >")
        self.assertGreater(r["regs"], 0)
        self.assertIn(".entry", r["ptx"])
        self.assertTrue(r["source"])
        again = self.c.compile("warp_allreduce", type="f32", width=16, op="max")
        self.assertEqual(again["cache"], "memory")
        self.assertNotIn("ptx", again)

    def test_metrics(self):
        self.assertIn("warpd_http_requests_total", self.c.metrics())

    def test_unreachable(self):
        with self.assertRaises(WarpdError) as cm:
            Client("http://127.0.0.1:1", timeout=5).health()
        self.assertEqual((cm.exception.status, cm.exception.code), (0, "connection_failed"))


# ---------------------------------------------------------------- live daemon: data routes when present
class LiveDataRoutes(unittest.TestCase):
    """The reduce, scan, buffers and jobs routes against the live daemon; a missing route fails."""

    def setUp(self):
        self.c = Client(URL)

    def need(self, method, path):
        self.assertFalse(route_missing(self.c, method, path), f"{method} {path} is missing from the server")

    def test_reduce_forms(self):
        self.need("POST", "/v1/reduce")
        self.assertEqual(self.c.reduce([1.5, 2, 3], type="f32", op="sum")["value"], 6.5)
        vals = [float(i % 17) for i in range(1000)]
        self.assertEqual(self.c.reduce(raw=pack(vals, "f32"), type="f32", op="max")["value"], 16.0)
        self.assertEqual(self.c.reduce(data_b64=pack(vals, "f32"), type="f32", op="sum")["value"], sum(vals))
        self.assertEqual(self.c.reduce(generate={"kind": "iota", "n": 100}, type="i32", op="sum")["value"], 4950)
        with self.assertRaises(WarpdError) as cm:
            self.c.reduce([1.0], type="f32", op="xor")
        self.assertEqual(cm.exception.status, 400)

    def test_reduce_stats(self):
        self.need("POST", "/v1/reduce")
        vals = [2, 4, 4, 4, 5, 5, 7, 9]
        self.assertEqual(self.c.reduce(vals, type="f64", op="var")["value"], 4.0)
        self.assertEqual(self.c.reduce(vals, type="f64", op="var", ddof=1)["value"], 32 / 7)
        self.assertEqual(self.c.reduce(raw=pack(vals, "f32"), type="f32", op="std", ddof=0)["value"], 2.0)
        self.assertEqual(self.c.reduce(vals, type="i32", op="count_nonzero")["value"], "8")
        with self.assertRaises(WarpdError) as cm:
            self.c.reduce(vals, type="f32", op="var", ddof=2)
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "ddof"))

    def test_scan(self):
        self.need("POST", "/v1/scan")
        r = self.c.scan([1, 2, 3, 4], type="i32", op="sum")
        self.assertEqual(r["data"], [1, 3, 6, 10])
        raw = self.c.scan(raw=pack([1, 2, 3, 4], "i32"), type="i32", op="sum", raw_out=True)
        self.assertEqual(unpack(raw, "i32"), [1, 3, 6, 10])

    def test_buffers(self):
        self.need("GET", "/v1/buffers")
        b = self.c.buffer_put(pack([1.0, 2.0, 3.0], "f32"), "f32")
        bid = b["id"]
        self.assertEqual(self.c.reduce(buffer=bid, type="f32", op="sum")["value"], 6.0)
        self.assertTrue(self.c.buffer(bid))
        self.c.buffer_delete(bid)
        with self.assertRaises(WarpdError) as cm:
            self.c.buffer(bid)
        self.assertEqual(cm.exception.status, 404)

    def test_jobs(self):
        self.need("POST", "/v1/jobs")
        # Any POST work route is a job kind; warp exists today, reduce once the data routes land.
        job = self.c.job_submit("warp", {"family": "shfl_xor", "args": {"lane_mask": 1}, "input": {"iota": 32}})
        self.assertIn(job["state"], ("queued", "running", "done"))
        done = self.c.job_wait(job["id"], timeout=60)
        self.assertEqual(done["state"], "done")
        self.assertEqual(done["result"]["output"], [i ^ 1 for i in range(32)])
        self.assertIn(job["id"], json.dumps(self.c.jobs()))
        bad = self.c.job_submit("warp", {"family": "shfl", "width": 12})
        with self.assertRaises(WarpdError) as cm:
            self.c.job_wait(bad["id"], timeout=60)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "bad_width", "width"))
        self.c.job_cancel(done["id"])
        with self.assertRaises(WarpdError) as cm:
            self.c.job(done["id"])
        self.assertEqual(cm.exception.status, 404)


# ---------------------------------------------------------------- live daemon: map and dot (transform-reduce)
class LiveMap(unittest.TestCase):
    def setUp(self):
        self.c = Client(URL)

    def test_map_reduce_and_scan(self):
        xs = [1.5, -2.0, 3.0, -4.25]
        r = self.c.reduce(xs, map="x*x")
        self.assertEqual(r["map"], "(x * x)")
        self.assertEqual(r["value"], sum(x * x for x in xs))  # exact in f32 for these values
        self.assertEqual(self.c.reduce(xs, op="max", map="abs(x)")["value"], 4.25)
        self.assertEqual(self.c.reduce([3, -1, 0, 7], type="i32", map="x > 0 ? 1 : 0")["value"], 2)
        got = self.c.scan([1, 2, 3], type="i32", map="x*x")["data"]
        self.assertEqual(got, [1, 1 + 4, 1 + 4 + 9])

    def test_dot_and_second_inputs(self):
        a, b = [1.0, 2.0, 3.0], [4.0, -5.0, 0.5]
        self.assertEqual(self.c.dot(a, b), sum(x * y for x, y in zip(a, b)))
        self.assertEqual(self.c.dot(a, b, full=True)["map"], "(x * y)")
        self.assertEqual(self.c.reduce(a, map="x*y + 1", data2=pack(b, "f32"))["value"],
                         sum(x * y + 1 for x, y in zip(a, b)))
        ida, idb = self.c.buffer_put(a, type="f32")["id"], self.c.buffer_put(b, type="f32")["id"]
        self.assertEqual(self.c.dot(None, None, buffer=ida, buffer2=idb), sum(x * y for x, y in zip(a, b)))
        with self.assertRaises(WarpdError) as cm:
            self.c.dot([1.0, 2.0], [1.0])
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "data2"))
        with self.assertRaises(WarpdError) as cm:
            self.c.reduce([1.0], map="x*w")
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "bad_map", "map"))
        with self.assertRaises(ValueError):
            self.c.reduce([1.0], map="x*y", data2=[1.0], buffer2=idb)


# ---------------------------------------------------------------- request shapes (recording stub)
class _Stub(http.server.BaseHTTPRequestHandler):
    log = []
    answer = (200, {"ok": True})

    def _handle(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        _Stub.log.append({"method": self.command, "path": self.path, "type": self.headers.get("Content-Type"),
                          "accept": self.headers.get("Accept"), "auth": self.headers.get("Authorization"),
                          "body": body})
        status, obj = _Stub.answer
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def log_message(self, *a):
        pass


class RequestShapes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()
        cls.c = Client(f"http://127.0.0.1:{cls.srv.server_address[1]}")

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()

    def setUp(self):
        _Stub.log.clear()
        _Stub.answer = (200, {"ok": True})

    def last(self):
        return _Stub.log[-1]

    def test_reduce_inline_b64_raw_buffer_generate(self):
        self.c.reduce([1.5, 2, 3], type="f32", op="sum", check=True)
        r = self.last()
        self.assertEqual((r["method"], r["path"], r["type"]), ("POST", "/v1/reduce", "application/json"))
        self.assertEqual(json.loads(r["body"]), {"type": "f32", "op": "sum", "data": [1.5, 2, 3], "check": True})
        self.c.reduce(data_b64=pack([1, 2], "i32"), type="i32", op="max", strategy="smem")
        self.assertEqual(json.loads(self.last()["body"]),
                         {"type": "i32", "op": "max", "data_b64": base64.b64encode(pack([1, 2], "i32")).decode(),
                          "strategy": "smem"})
        self.c.reduce(raw=pack([1.0, 2.0], "f64"), type="f64", op="min")
        r = self.last()
        self.assertEqual((r["path"], r["type"]), ("/v1/reduce?type=f64&op=min", "application/octet-stream"))
        self.assertEqual(unpack(r["body"], "f64"), [1.0, 2.0])
        self.c.reduce(buffer="b1", type="f32", op="sum")
        self.assertEqual(json.loads(self.last()["body"])["buffer"], "b1")
        self.c.reduce(generate={"kind": "random", "n": 10, "seed": 3}, type="f32", op="sum")
        self.assertEqual(json.loads(self.last()["body"])["generate"], {"kind": "random", "n": 10, "seed": 3})
        with self.assertRaises(ValueError):
            self.c.reduce([1], buffer="b1")

    def test_scan_raw_out_asks_for_bytes(self):
        self.c.scan([1, 2], type="i32", op="sum", exclusive=True, raw_out=True)
        r = self.last()
        self.assertEqual((r["path"], r["accept"]), ("/v1/scan", "application/octet-stream"))
        self.assertEqual(json.loads(r["body"]), {"type": "i32", "op": "sum", "data": [1, 2], "exclusive": True})

    def test_buffers_and_jobs_routes(self):
        self.c.buffer_put(pack([1.0], "f32"), "f32", ttl=60)
        r = self.last()
        self.assertEqual((r["method"], r["path"], r["type"]), ("PUT", "/v1/buffers?type=f32&ttl=60", "application/octet-stream"))
        self.c.buffer_put([1, 2], "i32")
        self.assertEqual(json.loads(self.last()["body"]), {"type": "i32", "data": [1, 2]})
        self.c.buffers()
        self.assertEqual((self.last()["method"], self.last()["path"]), ("GET", "/v1/buffers"))
        self.c.buffer("a/b")
        self.assertEqual(self.last()["path"], "/v1/buffers/a%2Fb")
        self.c.buffer_delete("x1")
        self.assertEqual((self.last()["method"], self.last()["path"]), ("DELETE", "/v1/buffers/x1"))
        self.c.job_submit("scan", {"type": "i32", "op": "sum", "data": [1]})
        self.assertEqual((self.last()["method"], self.last()["path"]), ("POST", "/v1/jobs"))
        self.assertEqual(json.loads(self.last()["body"]), {"kind": "scan", "request": {"type": "i32", "op": "sum", "data": [1]}})
        self.c.jobs("running")
        self.assertEqual(self.last()["path"], "/v1/jobs?state=running")
        self.c.job("j1")
        self.assertEqual((self.last()["method"], self.last()["path"]), ("GET", "/v1/jobs/j1"))
        self.c.job_cancel("j1")
        self.assertEqual((self.last()["method"], self.last()["path"]), ("DELETE", "/v1/jobs/j1"))

    def test_job_wait_polls_until_done_with_progress(self):
        states = iter([{"state": "queued", "progress": 0.0}, {"state": "running", "progress": 0.5},
                       {"state": "done", "progress": 1.0, "status": 200, "result": {"value": 6}},
                       {"state": "failed", "status": 400, "error": {"code": "bad_op", "field": "op", "message": "m"}}])
        orig = _Stub._handle

        def handle(self):
            _Stub.answer = (200, next(states))
            orig(self)

        _Stub.do_GET = handle
        try:
            seen = []
            j = self.c.job_wait("j9", poll=0.001, progress=lambda d, t: seen.append(d))
            self.assertEqual(j["result"]["value"], 6)
            self.assertEqual(seen, [0.0, 0.5, 1.0])
            with self.assertRaises(WarpdError) as cm:  # a failed job raises its endpoint's error
                self.c.job_wait("j10", poll=0.001)
            self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "bad_op", "op"))
        finally:
            _Stub.do_GET = orig

    def test_error_body_becomes_warpd_error(self):
        _Stub.answer = (413, {"error": {"code": "too_large", "field": "n", "message": "n above the limit"}})
        with self.assertRaises(WarpdError) as cm:
            self.c.reduce(generate={"kind": "iota", "n": 10**12})
        e = cm.exception
        self.assertEqual((e.status, e.code, e.field, e.message), (413, "too_large", "n", "n above the limit"))

    def test_upload_progress(self):
        seen = []
        data = bytes(3 * 1048576)
        self.c.reduce(raw=data, type="f32", op="sum", progress=lambda d, t: seen.append((d, t)))
        self.assertEqual(len(self.last()["body"]), len(data))
        self.assertEqual(seen[-1], (len(data), len(data)))
        self.assertGreaterEqual(len(seen), 3)
        out = io.StringIO()
        bar = warpd.progress_bar("upload", stream=out)
        for d in range(0, 101, 10):
            bar(d, 100)
        self.assertIn("100%", out.getvalue())
        self.assertTrue(out.getvalue().endswith("\n"))

    def test_token_is_sent_as_bearer(self):
        Client(self.c.base, token="tok-0123456789abcdef").health()
        self.assertEqual(self.last()["auth"], "Bearer tok-0123456789abcdef")
        with unittest.mock.patch.dict(os.environ, {"WARPD_TOKEN": "env-0123456789abcdef"}):
            Client(self.c.base).info()
        self.assertEqual(self.last()["auth"], "Bearer env-0123456789abcdef")
        with unittest.mock.patch.dict(os.environ, {"WARPD_TOKEN": ""}):
            Client(self.c.base).info()
        self.assertIsNone(self.last()["auth"])


# ---------------------------------------------------------------- pure helpers
class PrintWarp(unittest.TestCase):
    def test_untimed_steps_print_as_dashes(self):
        # a cuda warp answer without "profile": its device steps are null, device_us is the round trip
        r = {"family": "shfl_xor", "type": "i32", "width": 32, "mask": "0xffffffff", "lanes": 1, "backend": "cuda",
             "cache": "memory", "output": [1], "defined": [True], "undefined_reason": [None], "source_lane": [1],
             "timing": {"parse_us": 7.5, "upload_us": None, "kernel_us": None, "download_us": None,
                        "device_us": 15.25, "total_us": 40.0}}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            warpd._print_warp(r)
        self.assertIn("timing parse_us=7.5 upload_us=- kernel_us=- download_us=- device_us=15.25 total_us=40",
                      out.getvalue())


class Pack(unittest.TestCase):
    def test_round_trips(self):
        cases = {"i32": [-2**31, -1, 0, 2**31 - 1], "u32": [0, 2**32 - 1], "i64": [-2**63, 2**63 - 1],
                 "u64": [0, 2**64 - 1], "f32": [1.5, -0.25, math.inf], "f64": [0.1, -1e300], "f16": [0.5, -2.0, 65504.0],
                 "bf16": [1.0, -3.0, 256.0]}
        for t, vals in cases.items():
            b = pack(vals, t)
            self.assertEqual(len(b), len(vals) * warpd.ELEM_SIZE[t], t)
            self.assertEqual(unpack(b, t), vals, t)

    def test_json_spellings_and_rounding(self):
        self.assertEqual(unpack(pack(["18446744073709551615"], "u64"), "u64"), [2**64 - 1])
        self.assertTrue(math.isnan(unpack(pack(["NaN"], "f32"), "f32")[0]))
        self.assertEqual(unpack(pack(["-Infinity"], "f64"), "f64"), [-math.inf])
        self.assertEqual(unpack(pack([1.00390625], "bf16"), "bf16"), [1.0])  # ties to even
        with self.assertRaises(ValueError):
            unpack(b"\0\0\0", "f32")
        with self.assertRaises(ValueError):
            pack([1], "f128")


# ---------------------------------------------------------------- live daemon with --token-file
TOKEN = "py-test-token-0123456789abcdef"


class LiveToken(unittest.TestCase):
    """A daemon of its own with --token-file: the client sends token= or $WARPD_TOKEN."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warpd-py-token-")
        with open(os.path.join(cls.tmp, "token"), "w") as f:
            f.write(TOKEN + "\n")
        binary = os.path.join(ROOT, os.environ.get("BUILD", "build"), "warpd")
        cls.daemon = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--backend", "emu", "--cache-dir",
                                       os.path.join(cls.tmp, "cache"), "--token-file", os.path.join(cls.tmp, "token")],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", cls.daemon.stdout.readline())
        if not m:
            cls.tearDownClass()
            raise RuntimeError("the daemon with a token did not start")
        cls.url = m.group(1)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.terminate()
        cls.daemon.wait(10)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def no_env(self):
        return unittest.mock.patch.dict(os.environ, {"WARPD_TOKEN": ""})

    def test_without_a_token(self):
        with self.no_env():
            c = Client(self.url)
            self.assertEqual(c.health(), {"status": "ok"})  # open for probes
            with self.assertRaises(WarpdError) as cm:
                c.info()
            self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
            with self.assertRaises(WarpdError) as cm:
                Client(self.url, token="not-the-token-0123456789").reduce([1, 2], type="i32", op="sum")
            self.assertEqual(cm.exception.status, 401)

    def test_token_argument_and_environment(self):
        with self.no_env():
            self.assertEqual(Client(self.url, token=TOKEN).reduce([1, 2], type="i32", op="sum")["value"], 3)
        with unittest.mock.patch.dict(os.environ, {"WARPD_TOKEN": TOKEN}):
            self.assertEqual(Client(self.url).info()["name"], "warpd")

    def test_cli_reads_warpd_token(self):
        env = dict(os.environ, WARPD_TOKEN=TOKEN)
        p = subprocess.run(CLI + ["--url", self.url, "info"], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        env["WARPD_TOKEN"] = ""
        p = subprocess.run(CLI + ["--url", self.url, "info"], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 1)
        self.assertIn("401 unauthorized", p.stderr)


# ---------------------------------------------------------------- CLI
class Cli(unittest.TestCase):
    def cli(self, *args, ok=True):
        p = subprocess.run(CLI + ["--url", URL, *args], capture_output=True, text=True, timeout=120)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def test_whoami(self):
        out = self.cli("whoami").stdout
        self.assertTrue(out.startswith("default (admin)"), out)
        self.assertIn("buffer_bytes", out)

    def test_warp_table(self):
        out = self.cli("warp", "--family", "shfl_xor", "--width", "16", "--args", "lane_mask=1", "--iota", "32").stdout
        self.assertIn("key shfl_xor/i32/w16/m0xffffffff/sm_90", out)
        rows = [l.split() for l in out.splitlines() if re.match(r"^\s+\d+\s", l)]
        self.assertEqual(len(rows), 32)
        for lane, value, src in rows:
            self.assertEqual((int(value), int(src)), (int(lane) ^ 1, int(lane) ^ 1))

    def test_warp_json_and_per_lane_args(self):
        p = self.cli("warp", "--family", "shfl", "--args", "src_lane=" + ",".join(str(31 - i) for i in range(32)),
                     "--input", ",".join(str(i * 2) for i in range(32)), "--json")
        r = json.loads(p.stdout)
        self.assertEqual(r["output"], [2 * (31 - i) for i in range(32)])
        p = self.cli("warp", "--family", "ballot", "--args", 'pred={"op":"between","lo":42,"hi":53}', "--iota", "128", "--json")
        self.assertEqual(json.loads(p.stdout)["output"][40], "0x001ff800")

    def test_map_and_dot(self):
        r = json.loads(self.cli("reduce", "--data", "1,2,3", "--op", "dot", "--data2", "4,-5,6", "--json").stdout)
        self.assertEqual((r["value"], r["map"]), (4 - 10 + 18, "(x * y)"))
        r = json.loads(self.cli("scan", "--type", "i32", "--data", "1,-2,3", "--map", "x*x", "--json").stdout)
        self.assertEqual(r["data"], [1, 5, 14])
        p = self.cli("reduce", "--data", "1,2", "--map", "x*q", ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("map", p.stderr)

    def test_compile_info_families_health_metrics(self):
        out = self.cli("compile", "--family", "warp_allreduce", "--type", "f32", "--op", "max", "--ptx").stdout
        self.assertIn("instantiation: wp_warp_allreduce<float, 32, 0xffffffffu, wp_op_max<float> >", out)
        self.assertIn(".entry", out)
        self.assertEqual(json.loads(self.cli("info").stdout)["name"], "warpd")
        self.assertIn("shfl_xor", self.cli("families").stdout)
        self.assertEqual(json.loads(self.cli("health").stdout)["health"]["status"], "ok")
        self.assertIn("warpd_http_requests_total", self.cli("metrics").stdout)

    def test_errors_exit_1_with_code_and_field(self):
        p = self.cli("warp", "--family", "shfl", "--width", "12", ok=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("400 bad_width (width)", p.stderr)

    def test_reduce_file_upload(self):
        with tempfile.NamedTemporaryFile(suffix=".f32", delete=False) as f:
            f.write(pack([0.5] * (1 << 19), "f32"))  # 2 MiB: shows the progress bar
            path = f.name
        try:
            p = self.cli("reduce", "--type", "f32", "--op", "sum", path, ok=False)
            self.assertIn("upload [", p.stderr)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(float(p.stdout.split()[0]), 0.5 * (1 << 19))
        finally:
            os.unlink(path)


# ---------------------------------------------------------------- a daemon on a Unix socket (WARPD=unix:PATH)
class LiveUnixSocket(unittest.TestCase):
    """Its own daemon on --listen unix:PATH: the client and the CLI reach it through WARPD=unix:PATH."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warpd-unix-")
        cls.sock = os.path.join(cls.tmp, "warpd.sock")
        binary = os.path.join(ROOT, os.environ.get("BUILD", "build"), "warpd")
        cls.daemon = subprocess.Popen([binary, "--listen", "unix:" + cls.sock, "--backend", "emu", "--no-disk-cache"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = cls.daemon.stdout.readline()
        if f"listening on unix:{cls.sock}" not in line:
            cls.daemon.kill()
            raise RuntimeError(f"the daemon did not start on the socket: {line!r}")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.terminate()
        cls.daemon.wait(10)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_client_from_environment(self):
        old = os.environ.get("WARPD")
        os.environ["WARPD"] = "unix:" + self.sock
        try:
            c = Client()
        finally:
            if old is None:
                del os.environ["WARPD"]
            else:
                os.environ["WARPD"] = old
        self.assertEqual(c.health(), {"status": "ok"})
        data = [1.5, -2.0, 3.25, 8.0]
        self.assertEqual(c.reduce(raw=pack(data, "f32"), type="f32", op="sum")["value"], sum(data))
        self.assertEqual(c.reduce(data, type="f32", op="max")["value"], 8.0)
        with self.assertRaises(WarpdError) as cm:
            c.warp("shfl_xor", width=3, args={"lane_mask": 1}, input={"iota": 32})
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "width"))

    def test_socket_is_owner_only(self):
        self.assertEqual(os.stat(self.sock).st_mode & 0o777, 0o600)

    def test_cli(self):
        env = dict(os.environ, WARPD="unix:" + self.sock)
        p = subprocess.run(CLI + ["health"], capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ok", p.stdout)

    def test_missing_socket(self):
        with self.assertRaises(WarpdError) as cm:
            Client("unix:" + os.path.join(self.tmp, "nobody.sock"), timeout=5).health()
        self.assertEqual((cm.exception.status, cm.exception.code), (0, "connection_failed"))


# ---------------------------------------------------------------- live daemon: any-width warp collectives
class LiveAnyWidth(unittest.TestCase):
    """warp_reduce / warp_scan at widths that are not powers of two (CUB's logical warps) through reduce()/scan()'s
    keyword arguments: groups of `width`, the last one short; 400 bad_width naming width past 32."""

    def setUp(self):
        self.c = Client(URL)

    def test_reduce_and_scan_width_7(self):
        xs = list(range(1, 21))
        r = self.c.reduce(xs, type="i32", op="sum", family="warp_reduce", width=7)
        self.assertEqual((r["data"], r["width"]), ([sum(xs[0:7]), sum(xs[7:14]), sum(xs[14:])], 7))
        r = self.c.reduce(raw=pack(xs, "i32"), type="i32", op="max", family="warp_reduce", width=6)
        self.assertEqual(unpack(base64.b64decode(r["data_b64"]), "i32"), [6, 12, 18, 20])
        s = self.c.scan(xs[:8], type="i32", op="sum", family="warp_scan", width=3, exclusive=True)
        self.assertEqual(s["data"], [0, 1, 3, 0, 4, 9, 0, 7])

    def test_widths_listed_and_refused(self):
        fams = {f["name"]: f for f in self.c.families()}
        self.assertEqual(fams["warp_reduce"]["widths"], list(range(1, 33)))
        self.assertEqual(fams["warp_scan"]["widths"], list(range(1, 33)))
        self.assertEqual(fams["shfl_xor"]["widths"], [1, 2, 4, 8, 16, 32])
        for bad in (0, 33, 7.5):
            with self.assertRaises(WarpdError) as cm:
                self.c.reduce([1], type="i32", family="warp_reduce", width=bad)
            self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "bad_width", "width"))


if __name__ == "__main__":
    unittest.main()
