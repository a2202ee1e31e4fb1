#!/usr/bin/env python3
"""fair.py — the fair share of one daemon between two users, measured (bench/users/fair.sh starts the daemon).

A "flood" user keeps CONNS connections busy with large reduces (a 2^N-element f32 buffer of theirs,
reduced over and over: one large GPU job per request), while a "tiny" user sends one small reduce at a
time on one connection. Three runs of DURATION seconds each:
    tiny alone        the tiny user's latency with nothing else running
    flood alone       the flood's throughput and one large job's latency (its p50: "one large job's time")
    flood + tiny      the tiny user's latency with the flood on
The bound: with the flood on, the tiny p99 should stay within one large job's time plus the
tiny one's own (flood-alone p50 + tiny-alone p50). Prints a table and the bound.
    fair.py URL FLOOD_TOKEN TINY_TOKEN [--log2 N] [--conns C] [--duration S]
"""
import argparse
import http.client
import json
import multiprocessing
import threading
import time
import urllib.parse


def conn_for(url):
    u = urllib.parse.urlsplit(url)
    return Connector(u.hostname, u.port or 80)


class Connector:
    """Makes connections to one daemon (a class, not a lambda, so that flood processes can take it)."""

    def __init__(self, host, port):
        self.host, self.port = host, port

    def __call__(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=600)


def post(c, token, path, body, method="POST"):
    data = json.dumps(body).encode()
    c.request(method, path, data, {"Content-Type": "application/json", "Authorization": "Bearer " + token})
    r = c.getresponse()
    payload = r.read()
    return r.status, payload


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def loop(make, token, body, stop, out, errors):
    c = make()
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            st, payload = post(c, token, "/v1/reduce", body)
        except (OSError, http.client.HTTPException) as e:
            errors.append(str(e))
            c.close()
            c = make()
            continue
        if st != 200:
            errors.append(f"{st} {payload[:200]!r}")
            continue
        out.append(time.perf_counter() - t0)
    c.close()


def threads_for(make, token, body, n, duration):
    """n connections sending body for duration seconds: their latencies and errors."""
    stop = threading.Event()
    lat, errors = [], []
    threads = [threading.Thread(target=loop, args=(make, token, body, stop, lat, errors)) for _ in range(n)]
    for t in threads:
        t.start()
    time.sleep(duration)
    stop.set()
    for t in threads:
        t.join()
    return lat, errors


def flood_process(make, flood, n, duration, out):
    out.put(threads_for(make, flood[0], flood[1], n, duration))


def run(make, duration, flood=None, tiny=None, conns=0):
    """The flood's connections in processes of their own (FLOOD_PROCS, at most 8 threads each: one Python
    process tops out near 4,000 requests a second, and its lock would time the tiny user's requests, not
    the daemon's), the tiny user's one connection in this process."""
    flood_lat, tiny_lat, errors, procs = [], [], [], []
    out = multiprocessing.Queue()
    if flood:
        n_procs = min(conns, max(1, (conns + 7) // 8))
        for i in range(n_procs):
            n = conns // n_procs + (1 if i < conns % n_procs else 0)
            procs.append(multiprocessing.Process(target=flood_process, args=(make, flood, n, duration, out)))
        for p in procs:
            p.start()
    if tiny:
        time.sleep(0.2 if flood else 0)  # the flood first, so the tiny user meets a full queue
        tiny_lat, errors = threads_for(make, tiny[0], tiny[1], 1, duration)
    for _ in procs:
        lat, errs = out.get()
        flood_lat += lat
        errors += errs
    for p in procs:
        p.join()
    return flood_lat, tiny_lat, errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("flood_token")
    ap.add_argument("tiny_token")
    ap.add_argument("--log2", type=int, default=26)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--duration", type=float, default=10.0)
    a = ap.parse_args()
    make = conn_for(a.url)
    c = make()
    st, payload = post(c, a.flood_token, "/v1/buffers",
                       {"type": "f32", "generate": {"kind": "random", "n": 1 << a.log2, "seed": 1}}, method="PUT")
    if st != 201:
        raise SystemExit(f"fair.py: PUT /v1/buffers as the flood user: {st} {payload[:300]!r}")
    buf = json.loads(payload)["id"]
    flood = (a.flood_token, {"type": "f32", "op": "sum", "buffer": buf})
    tiny = (a.tiny_token, {"type": "f32", "op": "sum", "data": [1, 2, 3, 4, 5, 6, 7, 8]})
    for _ in range(3):  # warm: the kernels compiled and cached
        post(c, a.flood_token, "/v1/reduce", flood[1])
        post(c, a.tiny_token, "/v1/reduce", tiny[1])
    c.close()

    _, alone, e1 = run(make, a.duration, tiny=tiny)
    flood_alone, _, e2 = run(make, a.duration, flood=flood, conns=a.conns)
    flood_with, with_flood, e3 = run(make, a.duration, flood=flood, tiny=tiny, conns=a.conns)
    ms = lambda s: s * 1e3
    print(f"fair share: flood = {a.conns} connections of 2^{a.log2}-element f32 reduces (one buffer), "
          f"tiny = 8-element f32 reduces on 1 connection; {a.duration:g} s each")
    print(f"{'run':<14} {'tiny n':>7} {'tiny p50':>10} {'tiny p99':>10} {'flood req/s':>12} {'flood p50':>10} "
          f"{'flood p99':>10}")
    rows = [("tiny alone", alone, []), ("flood alone", [], flood_alone), ("flood + tiny", with_flood, flood_with)]
    for name, t, f in rows:
        tp = f"{ms(pct(t, 50)):10.3f} {ms(pct(t, 99)):10.3f}" if t else f"{'-':>10} {'-':>10}"
        fp = (f"{len(f) / a.duration:12.1f} {ms(pct(f, 50)):10.3f} {ms(pct(f, 99)):10.3f}" if f
              else f"{'-':>12} {'-':>10} {'-':>10}")
        print(f"{name:<14} {len(t):>7} {tp} {fp}")
    bound = pct(flood_alone, 50) + pct(alone, 50)
    p99 = pct(with_flood, 99)
    print(f"bound (one large job + the tiny one's own): {ms(bound):.3f} ms; tiny p99 with the flood "
          f"{ms(p99):.3f} ms: {'within' if p99 <= bound else 'BEYOND'} (milliseconds)")
    errs = e1 + e2 + e3
    if errs:
        print(f"{len(errs)} errors, first: {errs[0]}")


if __name__ == "__main__":
    main()
