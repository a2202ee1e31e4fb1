#!/usr/bin/env python3
"""keepalive.py — answers of every size on kept-alive connections, checked value by value.

A call keeps its last small answer's buffer for its next answer (wp_req_take_text), and the calls of
one HTTP thread serve each other's connections. So each answer here follows answers of other sizes on
the same connection and on others: warp jobs from 1 lane to 1,024 (an answer over the kept size),
reduces, refusals and health, interleaved over four connections. Every answer must be whole and right:
its length, its JSON, its values.

Usage: keepalive.py BASE_URL [ROUNDS [SEED]] [--no-values]. --no-values: the device's values are not
checked (the stand-in driver's launch computes none), only what the emulator and the request decide.
Prints "!! ..." for each failure, then "keepalive: N passed, N failed"; exits 1 on any failure.
"""
import http.client
import json
import random
import sys
from urllib.parse import urlparse

passed = failed = 0
values = "--no-values" not in sys.argv


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("!! " + what)


def ask(conn, method, path, body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = conn.getresponse()
    data = r.read()
    length = r.getheader("Content-Length")
    check(length is not None and int(length) == len(data), f"{path}: Content-Length {length}, {len(data)} bytes")
    try:
        return r.status, json.loads(data)
    except ValueError:
        check(False, f"{path}: not JSON: {data[:80]!r}")
        return r.status, None


def warp(conn, rng):
    lanes = rng.choice([1, 3, 32, 32, 64, 200, 1024])
    width = rng.choice([2, 4, 8, 16, 32])
    m = rng.randrange(1, width)
    body = {"family": "shfl_xor", "type": "i32", "width": width, "args": {"lane_mask": m}, "input": {"iota": lanes}}
    status, a = ask(conn, "POST", "/v1/warp", body)
    what = f"warp {lanes} lanes, width {width}, lane_mask {m}"
    check(status == 200 and a is not None, f"{what}: status {status}")
    if status != 200 or a is None:
        return
    # a partner past the job's last lane is not there: those lanes are undefined
    want = [i ^ m if (i ^ m) < lanes else None for i in range(lanes)]
    got = [v if d else None for v, d in zip(a.get("output", []), a.get("defined", []))]
    if not values:
        got, want = [v is None for v in got], [v is None for v in want]
    check(got == want and a.get("lanes") == lanes, f"{what}: output {a.get('output', [])[:8]}...")
    check(a.get("input") == list(range(lanes)), f"{what}: input")


def reduce(conn, rng):
    data = [rng.randrange(-1000, 1000) for _ in range(rng.choice([1, 3, 17, 300]))]
    status, a = ask(conn, "POST", "/v1/reduce", {"type": "f32", "op": "sum", "data": data})
    check(status == 200 and a is not None and (a.get("value") == sum(data) or not values) and
          a.get("count") == len(data),
          f"reduce of {len(data)}: status {status}, value {a and a.get('value')} against {sum(data)}")


def refused(conn, rng):
    status, a = ask(conn, "POST", "/v1/reduce", {"type": "f32", "op": "nosuch", "data": [1, 2]})
    err = (a or {}).get("error", {})
    check(status == 400 and err.get("code") == "bad_op" and err.get("field") == "op", f"bad op: {status} {err}")


def health(conn, rng):
    status, a = ask(conn, "GET", "/v1/health")
    check(status == 200 and a == {"status": "ok"}, f"health: {status} {a}")


def main():
    url = urlparse(sys.argv[1])
    args = [a for a in sys.argv[2:] if a != "--no-values"]
    rounds = int(args[0]) if args else 40
    rng = random.Random(int(args[1]) if len(args) > 1 else 7)
    conns = [http.client.HTTPConnection(url.hostname, url.port, timeout=30) for _ in range(4)]
    steps = [warp, warp, reduce, refused, health]
    for _ in range(rounds):
        for conn in conns:
            rng.choice(steps)(conn, rng)
    for conn in conns:
        conn.close()
    print(f"keepalive: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
