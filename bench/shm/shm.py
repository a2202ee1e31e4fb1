#!/usr/bin/env python3
"""shm.py — the data plane's numbers on the GPU machine: data where it already is, beside the same data over
HTTP and beside the pinned host -> device copy measured by this same program (CuPy).

  python3 bench/shm/shm.py URL [--bytes N] [--runs R]

Against a cuda warpd at URL (loopback), for N bytes of f32 (default 1 GiB):
  pinned   cupy: page-locked host buffer -> device, GB/s (the bus's ceiling here)
  shm      a /dev/shm region registered with POST /v1/shm, POST /v1/reduce {"shm": ...}: end to end GB/s
  http     the same bytes as a raw body (Content-Type: application/octet-stream), GB/s
  small    one connection, 8 elements: p50 of a region job against the same job as inline JSON (µs)
Each row: median and best of R runs (default 5). The results must agree bit for bit (checked)."""
import http.client
import json
import os
import statistics
import struct
import sys
import time
import urllib.parse


def request(conn, method, path, body=None, ctype="application/json"):
    headers = {"Content-Type": ctype} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data) if data[:1] == b"{" else data


def pinned_gbs(nbytes, runs):
    try:
        import cupy as cp
        import numpy as np
    except ImportError:
        return None
    host = cp.cuda.alloc_pinned_memory(nbytes)
    src = np.frombuffer(host, dtype=np.uint8, count=nbytes)
    src[:] = 1
    dev = cp.empty(nbytes, dtype=cp.uint8)
    times = []
    for _ in range(runs):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        dev.set(src)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return [nbytes / t / 1e9 for t in times]


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    url = urllib.parse.urlparse(args[0])
    nbytes = int(args[args.index("--bytes") + 1]) if "--bytes" in args else 1 << 30
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    n = nbytes // 4
    name = f"/warpd-bench-{os.getpid()}"
    path = "/dev/shm" + name
    # f32 values whose sum is exact in any order: small integers
    block = struct.pack("<1024f", *[float(i % 7) for i in range(1024)])
    with open(path, "wb") as f:
        for _ in range(nbytes // len(block)):
            f.write(block)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    rows = []
    try:
        t0 = time.perf_counter()
        reg = request(conn, "POST", "/v1/shm", json.dumps({"name": name}))
        reg_ms = (time.perf_counter() - t0) * 1e3
        body = json.dumps({"type": "f32", "op": "sum", "shm": {"id": reg["id"]}})
        request(conn, "POST", "/v1/reduce", body)  # compile, warm
        shm_t, value = [], None
        for _ in range(runs):
            t0 = time.perf_counter()
            r = request(conn, "POST", "/v1/reduce", body)
            shm_t.append(time.perf_counter() - t0)
            value = r["value"]
        kernel_us = r["timing"].get("kernel_us")
        kernel = f"kernel {kernel_us} us" if kernel_us is not None else f"device {r['timing'].get('device_us')} us (untimed)"
        raw = open(path, "rb").read()
        http_t = []
        for _ in range(min(runs, 3)):
            t0 = time.perf_counter()
            h = request(conn, "POST", "/v1/reduce?type=f32&op=sum", raw, "application/octet-stream")
            http_t.append(time.perf_counter() - t0)
            if h["value"] != value:
                raise SystemExit(f"shm and http disagree: {value} vs {h['value']}")
        del raw
        small_name = name + "-small"
        with open("/dev/shm" + small_name, "wb") as f:
            f.write(struct.pack("<8f", *range(8)))
        sreg = request(conn, "POST", "/v1/shm", json.dumps({"name": small_name}))
        sbody = json.dumps({"type": "f32", "op": "sum", "shm": {"id": sreg["id"]}})
        jbody = json.dumps({"type": "f32", "op": "sum", "data": list(range(8))})
        lat = {"shm": [], "json": []}
        for i in range(4000):
            kind, b = ("shm", sbody) if i % 2 else ("json", jbody)
            t0 = time.perf_counter()
            request(conn, "POST", "/v1/reduce", b)
            lat[kind].append((time.perf_counter() - t0) * 1e6)
        request(conn, "DELETE", "/v1/shm/" + sreg["id"])
        request(conn, "DELETE", "/v1/shm/" + reg["id"])
        os.unlink("/dev/shm" + small_name)
        pin = pinned_gbs(nbytes, runs)
        gbs = lambda ts: [nbytes / t / 1e9 for t in ts]
        rows.append(("pinned copy (cupy)", pin))
        rows.append(("shm reduce, end to end", gbs(shm_t)))
        rows.append(("http raw body reduce", gbs(http_t)))
        print(f"{nbytes >> 20} MiB f32, sum {value}; register {reg_ms:.1f} ms (registered: {reg['registered']}); "
              f"{kernel}")
        print(f"{'path':28} {'median GB/s':>12} {'best GB/s':>10}")
        for label, v in rows:
            if v:
                print(f"{label:28} {statistics.median(v):12.2f} {max(v):10.2f}")
            else:
                print(f"{label:28} {'(no cupy)':>12}")
        if pin:
            print(f"shm / pinned: {statistics.median(gbs(shm_t)) / statistics.median(pin):.2f}x;"
                  f" shm / http: {statistics.median(gbs(shm_t)) / statistics.median(gbs(http_t)):.1f}x")
        print(f"one connection, 8 f32: p50 shm {statistics.median(lat['shm']):.1f} us, "
              f"inline JSON {statistics.median(lat['json']):.1f} us")
    finally:
        for p in (path, "/dev/shm" + name + "-small"):
            if os.path.exists(p):
                os.unlink(p)


if __name__ == "__main__":
    main()
