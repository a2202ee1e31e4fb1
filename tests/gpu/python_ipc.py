#!/usr/bin/env python3
"""python_ipc.py — the Python client's CUDA IPC path on the GPU machine (the data plane): CuPy arrays and PyTorch
CUDA tensors reduced and scanned by a cuda warpd in place (PUT /v1/buffers {"cuda_ipc"} once per array,
then POST /v1/reduce {"buffer"}), checked bit for bit against the same data sent over HTTP as a numpy
copy. Needs CuPy and/or PyTorch (the GPU machine's python3 has both); prints SKIPPED and exits 0 with
neither.

  WARPD_URL=http://127.0.0.1:PORT python3 tests/gpu/python_ipc.py          (checks; exit 1 on a failure)
  WARPD_URL=http://127.0.0.1:PORT python3 tests/gpu/python_ipc.py --bench  (timings, a table)

Checks, for each framework, type (f32 f64 i32 i64 u32 f16; torch: bf16 too) and size (1, 1000, 2^20+3):
reduce sum and max, the same through a slice at an offset inside the allocation, scan sum (an array of
the caller's kind on its device comes back, written by the daemon into a second IPC buffer), and scan
into out=; then: repeated reduces of one array cost one PUT; transport "auto" takes IPC; close() deletes
the buffers. The last line is "python_ipc: N passed, N failed".

--bench (the daemon needs --max-body above 1 GiB for the HTTP row; bench/gpu.sh shm starts it so):
  ipc      a 2^28 f32 CuPy array reduced through IPC 20 times: the first call (PUT, the daemon opens the
           handle) and the median of the other 19, against the kernel time the daemon reports
           (timing.kernel_us of the same reduce with "profile": true)
  shared   a Client.shared() 2^28 f32 array: POST /v1/reduce {"shm"} end to end, GB/s
  auto     an ordinary numpy 2^28 f32 array through transport "auto" (copied into a pooled region)
  http     the same array as a raw HTTP body (transport "http")"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
import warpd  # noqa: E402

URL = os.environ.get("WARPD_URL", "http://127.0.0.1:8080")
SIZES = (1, 1000, (1 << 20) + 3)
TYPES = ("float32", "float64", "int32", "int64", "uint32", "float16")

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}", flush=True)
    return ok


def frameworks():
    have = []
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        have.append("cupy")
    except Exception as e:  # noqa: BLE001 (no CuPy, or it finds no GPU)
        print(f"cupy: not used ({type(e).__name__}: {e})")
    try:
        import torch
        if torch.cuda.is_available():
            have.append("torch")
        else:
            print("torch: not used (no CUDA device)")
    except Exception as e:  # noqa: BLE001
        print(f"torch: not used ({type(e).__name__}: {e})")
    return have


def host_data(np, dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype.startswith("float") or dtype == "bfloat16":
        return (rng.standard_normal(n) * 100).astype("float32" if dtype == "bfloat16" else dtype)
    return rng.integers(0, 1000, size=n).astype(dtype)


def to_device(fw, host, dtype):
    if fw == "cupy":
        import cupy
        return cupy.asarray(host)
    import torch
    if dtype == "bfloat16":
        return torch.from_numpy(host).to("cuda").to(torch.bfloat16)
    return torch.from_numpy(host.copy()).to("cuda")


def to_host_bytes(fw, x):
    if fw == "cupy":
        return x.get().tobytes()
    import torch
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).cpu().numpy().tobytes()
    return x.cpu().numpy().tobytes()


def host_copy(np, fw, x, dtype):
    """The device array's exact bytes as a numpy array (bf16: uint16 bits, sent with type bf16)."""
    if fw == "torch" and dtype == "bfloat16":
        return np.frombuffer(to_host_bytes(fw, x), dtype=np.uint16), "bf16"
    return np.frombuffer(to_host_bytes(fw, x), dtype=dtype), None


def is_kind(fw, y, x):
    if fw == "cupy":
        import cupy
        return isinstance(y, cupy.ndarray) and y.device.id == x.device.id and y.shape == x.shape
    import torch
    return isinstance(y, torch.Tensor) and y.device == x.device and y.shape == x.shape and y.dtype == x.dtype


def checks():
    import numpy as np
    fws = frameworks()
    if not fws:
        print("python_ipc: SKIPPED (neither CuPy nor PyTorch with a GPU)")
        return 0
    c = warpd.Client(URL, transport="ipc")
    http = warpd.Client(URL, transport="http")
    info = c.info()
    print(f"daemon {info.get('version')} backend {info.get('backend')} device {info.get('device', {})}")
    for fw in fws:
        for dtype in TYPES + (("bfloat16",) if fw == "torch" else ()):
            for n in SIZES:
                what = f"{fw} {dtype} n={n}"
                try:
                    host = host_data(np, dtype, n, seed=n)
                    x = to_device(fw, host, dtype)
                    h, ht = host_copy(np, fw, x, dtype)
                    for op in ("sum", "max"):
                        got, want = c.reduce(x, op=op), http.reduce(h, type=ht, op=op)
                        check(got["value"] == want["value"],
                              f"{what} reduce {op}: ipc {got['value']!r} ({got.get('strategy')}) != http "
                              f"{want['value']!r} ({want.get('strategy')})")
                    if n > 5:
                        got, want = c.reduce(x[5:]), http.reduce(h[5:], type=ht)
                        check(got["value"] == want["value"] and got["count"] == n - 5,
                              f"{what} reduce of x[5:] (offset {5 * h.itemsize}): {got['value']!r} != {want['value']!r}")
                    y = c.scan(x)
                    want = http.scan(h, type=ht, raw_out=True)
                    check(is_kind(fw, y, x), f"{what} scan: {type(y)} is not the input's kind, device and shape")
                    check(to_host_bytes(fw, y) == bytes(want), f"{what} scan: the bytes differ from HTTP's")
                    out = to_device(fw, np.zeros_like(host), dtype)
                    y2 = c.scan(x, out=out)
                    check(y2 is out and to_host_bytes(fw, out) == bytes(want), f"{what} scan out=")
                except (warpd.WarpdError, warpd.CudaError, ValueError) as e:
                    check(False, f"{what}: {type(e).__name__}: {e}")
    check(not c._ipc_no_output, 'the daemon refused "output": {"buffer": ID} (SHM_API.md): every scan above came '
          'back as bytes and was copied to the device, not written by the daemon into an IPC buffer')
    check(c.counts["ipc"] > 0 and c.counts["http"] == 0, f"transport ipc: counts {c.counts}")
    # the repeated reduces above (max after sum of one array) went through the client's doorbell channel
    ch = c._res.channel
    served = [x["requests"] for x in http._json("GET", "/v1/channels")["channels"] if ch and x["id"] == ch.id]
    check(ch is not None and served and served[0] > 0, f"the doorbell channel: {ch and ch.id} served {served} "
          f"(refused: {c._res.channel_refused})")
    # one PUT per array, one POST per reduce; "auto" takes IPC; close() deletes the buffers
    fw = fws[0]
    x = to_device(fw, host_data(np, "float32", 4096, seed=1), "float32")
    log = []
    auto = warpd.Client(URL, channel=False)  # the lean path over HTTP (the channel's: below)
    orig = auto.request

    def spy(method, path, body=None, **kw):
        log.append((method, path))
        return orig(method, path, body, **kw)
    auto.request = spy
    fast = []
    orig_fast = auto._fast_exchange

    def spy_fast(conn, req):
        got = orig_fast(conn, req)
        fast.append(got is not None)
        return got
    auto._fast_exchange = spy_fast
    values = {auto.reduce(x)["value"] for _ in range(10)}
    check(len(values) == 1, f"{fw}: ten reduces of one array gave {values}")
    check(log.count(("PUT", "/v1/buffers")) == 1, f"{fw}: {log.count(('PUT', '/v1/buffers'))} PUTs for ten reduces")
    check(log.count(("POST", "/v1/reduce")) == 1 and fast == [True] * 9,
          f"{fw}: ten reduces: {log.count(('POST', '/v1/reduce'))} POSTs by request(), the lean path {fast} "
          "(want 1, then 9 lean)")
    # the buffer gone on the daemon: the lean path's 404 falls back, the general path makes it again
    bid = next(iter(auto._res.ipc.values()))
    http.request("DELETE", f"/v1/buffers/{bid}")
    again = auto.reduce(x)["value"]
    check(again in values and fast[-1] is False and log.count(("PUT", "/v1/buffers")) == 2,
          f"{fw}: after DELETE of {bid}: value {again} (want {values}), lean path {fast[-1:]}, "
          f"{log.count(('PUT', '/v1/buffers'))} PUTs (want 2)")
    check(auto.counts["ipc"] == 11 and auto.ipc_refused is None, f"{fw}: auto: counts {auto.counts}, "
          f"refused {auto.ipc_refused}")
    ids = list(auto._res.ipc.values())
    held = {b["id"] for b in http.buffers().get("buffers", [])}
    check(set(ids) <= held, f"{fw}: the IPC buffer {ids} is not listed by GET /v1/buffers")
    auto.close()
    held = {b["id"] for b in http.buffers().get("buffers", [])}
    check(not set(ids) & held, f"{fw}: close() left {set(ids) & held}")
    # the same through a doorbell channel: nine of ten reduces by the channel, the same value
    chc = warpd.Client(URL)
    got = {chc.reduce(x)["value"] for _ in range(10)}
    ch = chc._res.channel
    served = [x["requests"] for x in http._json("GET", "/v1/channels")["channels"] if ch and x["id"] == ch.id]
    check(got == values and served == [9], f"{fw}: ten reduces by channel: {got} (want {values}), served {served}")
    http.request("DELETE", f"/v1/buffers/{next(iter(chc._res.ipc.values()))}")
    again = chc.reduce(x)["value"]  # the channel answers 404: the general path puts the buffer again
    check(again in values and chc.counts["ipc"] == 11, f"{fw}: channel after DELETE: {again}, counts {chc.counts}")
    chc.close()
    left = [x["id"] for x in http._json("GET", "/v1/channels")["channels"] if x["id"] == ch.id]
    check(not left, f"{fw}: close() left the channel {left}")
    c.close()
    print(f"python_ipc: {passed} passed, {failed} failed")
    return 1 if failed else 0


def bench():
    import numpy as np
    try:
        import cupy
    except ImportError:
        print("python_ipc --bench: SKIPPED (no CuPy)")
        return 0
    n = 1 << 28
    nbytes = n * 4
    gb = nbytes / 1e9
    rows = []
    c = warpd.Client(URL)
    host = np.zeros(n, dtype=np.float32)
    host[::1024] = 1.0  # every partial sum is a small integer: exact in f32 in any order
    want = float(n // 1024)

    def timed(fn, runs):
        ts, answers = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            answers.append(fn())
            ts.append(time.perf_counter() - t0)
        return ts, answers

    x = cupy.asarray(host)
    cupy.cuda.Device().synchronize()
    ts, answers = timed(lambda: c.reduce(x, transport="ipc"), 20)
    prof = [c.reduce(x, transport="ipc", profile=True)["timing"] for _ in range(5)]
    kernel = statistics.median(p["kernel_us"] for p in prof if p.get("kernel_us") is not None) \
        if any(p.get("kernel_us") is not None for p in prof) else float("nan")
    total = statistics.median(p["total_us"] for p in prof)
    ok = all(a["value"] == want for a in answers)
    rows.append(("ipc first (PUT + open)", ts[0], gb / ts[0], ok))
    rows.append(("ipc median of 19", statistics.median(ts[1:]), gb / statistics.median(ts[1:]), ok))
    print(f"ipc: the daemon's kernel_us {kernel:.1f} (median of 5 profiled; {gb / (kernel / 1e6):.0f} GB/s), "
          f"its total_us {total:.1f}; the client's median {statistics.median(ts[1:]) * 1e6:.1f} us")
    c.ipc_release()
    del x
    cupy.get_default_memory_pool().free_all_blocks()

    a = c.shared(n, "f32")
    np.copyto(a, host)
    ts, answers = timed(lambda: c.reduce(a), 6)
    rows.append(("shared() first", ts[0], gb / ts[0], answers[0]["value"] == want))
    rows.append(("shared() median of 5", statistics.median(ts[1:]), gb / statistics.median(ts[1:]),
                 all(x["value"] == want for x in answers)))
    del a
    ts, answers = timed(lambda: c.reduce(host), 6)  # "auto": a pooled region takes the copy
    rows.append(("numpy auto first (pool made)", ts[0], gb / ts[0], answers[0]["value"] == want))
    rows.append(("numpy auto median of 5", statistics.median(ts[1:]), gb / statistics.median(ts[1:]),
                 all(x["value"] == want for x in answers)))
    shm_n = c.counts["shm"]
    c.shm_trim()
    try:
        ts, answers = timed(lambda: c.reduce(host, transport="http"), 4)
        rows.append(("numpy http median of 4", statistics.median(ts), gb / statistics.median(ts),
                     all(x["value"] == want for x in answers)))
    except warpd.WarpdError as e:
        rows.append((f"numpy http: {e.code} (--max-body?)", float("nan"), float("nan"), False))
    c.close()
    print(f"2^28 f32 ({nbytes >> 20} MiB) reduced, sum {want:.0f}; region jobs {shm_n}")
    print(f"{'path':<34} {'seconds':>10} {'GB/s':>8}  right")
    for name, s, rate, ok in rows:
        print(f"{name:<34} {s:>10.4f} {rate:>8.1f}  {'yes' if ok else 'NO'}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", action="store_true")
    sys.exit(bench() if ap.parse_args().bench else checks())
