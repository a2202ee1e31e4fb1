#!/usr/bin/python3
"""make_hist_cases.py — the histogram family against numpy (needs /usr/bin/python3 with numpy).

  make_hist_cases.py > tests/api/cases/histogram.json    the API cases: adversarial inputs, and the
                                                         counts and edges numpy's np.histogram gives
  make_hist_cases.py --live URL [--rounds N]             the same and N rounds of random ranges against
                                                         a running daemon (emu or cuda): every count must
                                                         be numpy's; prints "hist-numpy: N passed, N failed"

Values are the edges themselves, their neighbours one ulp either side, lo and hi, -0.0, NaN, +-inf,
denormals, the type's extremes and random values around the range. A range whose edges repeat in the
type (numpy goes on with them; warpd answers 400 bad_bins) and every other bad input expect a 400 naming
the field.
"""
import base64
import json
import sys
import urllib.request

import numpy as np

DT = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32, "u32": np.uint32,
      "i64": np.int64, "u64": np.uint64}


def edge_dtype(t):
    return {"f32": np.float32, "f16": np.float16}.get(t, np.float64)


def adversarial(t, lo, hi, bins, rng, extra=24):
    d = DT[t]
    e = np.linspace(lo, hi, bins + 1).astype(edge_dtype(t))
    pick = e if len(e) <= 40 else e[rng.choice(len(e), 40, replace=False)]
    if np.issubdtype(d, np.floating):
        fi = np.finfo(d)
        vals = [pick.astype(d), np.nextafter(pick.astype(d), d(np.inf)), np.nextafter(pick.astype(d), d(-np.inf)),
                np.array([lo, hi, -0.0, 0.0, np.nan, np.inf, -np.inf, fi.tiny, -fi.tiny, fi.tiny / 4,
                          fi.max, -fi.max], dtype=np.float64).astype(d),
                (lo + (hi - lo) * (rng.random(extra) * 1.2 - 0.1)).astype(d)]
    else:
        ii = np.iinfo(d)
        lo_i, hi_i = float(ii.min), float(ii.max) * (1 - 2**-52)
        base = np.concatenate([np.floor(pick), np.ceil(pick), np.floor(pick) - 1, np.ceil(pick) + 1])
        base = base[(base >= ii.min) & (base <= ii.max)]
        vals = [base.astype(d), np.array([ii.min, ii.max, 0], dtype=d),
                np.clip(lo + (hi - lo) * (rng.random(extra) * 1.2 - 0.1), lo_i, hi_i).astype(d)]
    return np.concatenate(vals)


def edges_repeat(t, lo, hi, bins):
    e = np.linspace(lo, hi, bins + 1).astype(edge_dtype(t))
    return not np.all(e[1:] > e[:-1]) or not np.all(np.isfinite(e))


def jnum(t, x):
    if np.issubdtype(DT[t], np.integer):
        return int(x) if abs(int(x)) < 2**53 else str(int(x))
    x = float(x)
    return "nan" if x != x else ("inf" if x == np.inf else ("-inf" if x == -np.inf else x))


def case(t, lo, hi, bins, data, name):
    body = {"family": "histogram", "type": t, "bins": bins, "range": [lo, hi]}
    if t == "f64":  # exact bits: a JSON printer may round a double's 17th digit (cJSON's does)
        body["data_b64"] = base64.b64encode(np.asarray(data, "<f8").tobytes()).decode()
    else:
        body["data"] = [jnum(t, x) for x in data]
    if edges_repeat(t, lo, hi, bins):
        return {"name": name, "method": "POST", "path": "/v1/reduce", "body": body,
                "expect": {"status": 400, "json": {"error": {"code": "bad_bins", "field": "bins"}}}}
    counts, edges = np.histogram(data, bins, range=(lo, hi))
    total = int(counts.sum())
    exp = {"counts": [str(int(c)) for c in counts], "in_range": str(total), "out_of_range": str(len(data) - total),
           "count": len(data), "bins": bins}
    if len(edges) <= 300 and all(float("%.15g" % x) == float(x) for x in edges):
        exp["edges"] = [float(str(x)) for x in edges]  # as warpd prints them: shortest text of the type
    return {"name": name, "method": "POST", "path": "/v1/reduce", "body": body,
            "expect": {"status": 200, "json": exp}}


RANGES = [(0.0, 1.0), (-1.0, 1.0), (0.1, 0.7), (-3.3, 7.7), (1000.0, 1001.0), (0.0, 1e-38), (-1e30, 1e30),
          (1.0, 1.0 + 2**-20), (-2.5, -0.5), (0.3, 100.9)]
BINS = [1, 2, 3, 7, 10, 100, 256, 1000]


def cases(rng):
    out = []
    for ti, t in enumerate(["f32", "f64", "f16", "i32", "u32", "i64", "u64"]):
        for k, (lo, hi) in enumerate(RANGES):
            if t == "f16" and max(abs(lo), abs(hi)) > 6e4:
                continue
            if t[0] in "iu":
                lo, hi = lo * 1000, hi * 1000 + 17
                if t[0] == "u":
                    lo, hi = abs(lo), abs(lo) + abs(hi - lo)
            # f32: two bin counts a range, the others one (every bin count comes round over the ranges)
            for bins in ([BINS[k % 8], BINS[(k + 4) % 8]] if t == "f32" else [BINS[(k + ti) % 8]]):
                data = adversarial(t, lo, hi, bins, rng)
                out.append(case(t, lo, hi, bins, data, f"histogram {t} [{lo:g}, {hi:g}] {bins} bins"))
    for lo, hi in [(-3.3, 7.7)]:  # the most bins of strategy smem, and past them (atomic)
        for bins in [4096, 13000]:
            out.append(case("f32", lo, hi, bins, adversarial("f32", lo, hi, bins, rng, extra=16), f"histogram f32 [{lo:g}, {hi:g}] {bins} bins"))
    big = np.array([2**63 - 1, 2**63 - 512, 2**62 + 1, 2**53 + 1], dtype=np.int64)
    out.append(case("i64", 0.0, 9.3e18, 5, big, "histogram i64 near 2^63 (rounded to f64 as numpy does)"))
    out.append(case("f32", 0.0, 1.0, 4, np.array([], np.float32), "histogram empty input: zero counts"))
    bad = [({"bins": 0, "range": [0, 1]}, "bins"), ({"bins": 2**20 + 1, "range": [0, 1]}, "bins"),
           ({"bins": 2.5, "range": [0, 1]}, "bins"), ({"range": [0, 1]}, "bins"), ({"bins": 4}, "range"),
           ({"bins": 4, "range": [1, 1]}, "range"), ({"bins": 4, "range": [2, 1]}, "range"),
           ({"bins": 4, "range": ["inf", 1]}, "range"), ({"bins": 4, "range": [0]}, "range"),
           ({"bins": 4, "range": [0, 1e39]}, "range"), ({"bins": 4, "range": [0, 1], "op": "sum"}, "op"),
           ({"bins": 20000, "range": [0, 1], "strategy": "smem"}, "bins"),
           ({"bins": 4, "range": [0, 1], "output": "b64"}, "output")]
    for extra, field in bad:
        body = {"family": "histogram", "type": "f32", "data": [0.5]}
        body.update(extra)
        out.append({"name": f"histogram bad {field}: {json.dumps(extra)}", "method": "POST", "path": "/v1/reduce",
                    "body": body, "expect": {"status": 400, "json": {"error": {"field": field}}}})
    out.append({"name": "histogram: bins on another family", "method": "POST", "path": "/v1/reduce",
                "body": {"type": "f32", "op": "sum", "bins": 4, "data": [1]},
                "expect": {"status": 400, "json": {"error": {"code": "unknown_field", "field": "bins"}}}})
    return out


def post(url, body):
    req = urllib.request.Request(url + "/v1/reduce", json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def live(url, rounds, rng):
    passed = failed = 0
    todo = cases(rng)
    for _ in range(rounds):  # random ranges and bin counts, the big bin counts too
        t = rng.choice(["f32", "f32", "f64", "f16", "i32", "i64"])
        lo = float(rng.normal() * 10.0 ** rng.integers(-3, 4))
        hi = lo + float(rng.random() * 10.0 ** rng.integers(-3, 4)) + 1e-9
        if t[0] == "i":
            lo, hi = round(lo * 100), round(hi * 100) + 1
        if t == "f16":
            lo, hi = max(lo, -6e4), min(hi, 6e4)
        bins = int(rng.choice([1, 5, 64, 255, 256, 999, 12288, 12289, 65536, 2**20]))
        data = adversarial(t, lo, hi, bins, rng, extra=4096)
        todo.append(case(t, lo, hi, bins, data, f"random {t} [{lo!r}, {hi!r}] {bins}"))
    for c in todo:
        status, got = post(url, c["body"])
        want = c["expect"]
        ok = status == want["status"]
        for k, v in want["json"].items():
            if k == "error":
                ok = ok and all(got.get("error", {}).get(kk) == vv for kk, vv in v.items())
            elif k != "edges":
                ok = ok and got.get(k) == v
        if ok and "edges" in want["json"]:
            ed = edge_dtype(c["body"]["type"])
            ok = np.array_equal(np.array(got["edges"], float).astype(ed), np.array(want["json"]["edges"], float).astype(ed))
        passed += ok
        failed += not ok
        if not ok:
            print("FAIL", c["name"], status, json.dumps(got)[:300])
    print(f"hist-numpy: {passed} passed, {failed} failed")
    return failed == 0


if __name__ == "__main__":
    rng = np.random.default_rng(21)
    if len(sys.argv) > 2 and sys.argv[1] == "--live":
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 40
        sys.exit(0 if live(sys.argv[2], rounds, rng) else 1)
    print("[\n" + ",\n".join(json.dumps(c, separators=(",", ":")) for c in cases(rng)) + "\n]")
