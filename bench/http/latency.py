#!/usr/bin/env python3
"""latency.py — where one connection's time goes: N keep-alive requests one after another (after a
warm-up), each timed at the client, and the medians of the response's own timing fields (server side:
parse, key, cache, upload/kernel/download as the device's events saw them, total). The gap between the
client's round trip and the server's total_us is HTTP and the kernel's TCP; total_us minus the device
intervals is warpd's own CPU. Each route twice: as sent by default (on cuda a small job is untimed: its
steps are null, device_us is its round trip) and with "profile": true (timing events around each step).
    bench/http/latency.py PORT [N]   (a daemon already listening on 127.0.0.1:PORT; bench/gpu.sh prof
    and untimed run it)"""
import http.client, json, statistics, sys, time

port, n = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2000
bodies = {
    "reduce": {"type": "f32", "op": "sum", "data": [1, 2, 3]},
    "warp": {"family": "shfl_xor", "type": "i32", "width": 32, "args": {"lane_mask": 1}, "input": {"iota": 32}},
}
bodies.update({k + "+prof": dict(v, profile=True) for k, v in list(bodies.items())})
c = http.client.HTTPConnection("127.0.0.1", port)
for route, body in bodies.items():
    data = json.dumps(body)
    rtt, fields = [], {}
    for i in range(n + 200):
        t0 = time.perf_counter()
        c.request("POST", "/v1/" + route.split("+")[0], data, {"Content-Type": "application/json"})
        r = c.getresponse()
        d = json.loads(r.read())
        t1 = time.perf_counter()
        if i < 200:
            continue
        rtt.append((t1 - t0) * 1e6)
        for k, v in d.get("timing", {}).items():
            if v is not None:  # an untimed step
                fields.setdefault(k, []).append(v)
    med = {k: statistics.median(v) for k, v in fields.items()}
    print(f"{route:12s} client round trip p50 {statistics.median(rtt):7.1f} us  (server total_us p50 {med.get('total_us', 0):.1f})")
    print("        server p50: " + "  ".join(f"{k}={v:.1f}" for k, v in med.items() if k != "total_us"))
