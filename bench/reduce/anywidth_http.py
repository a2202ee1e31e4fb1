#!/usr/bin/env python3
"""anywidth_http.py URL — warp_reduce / warp_scan at widths 1..32 (and block_reduce / block_scan at blocks
that are not powers of two) over HTTP on a cuda daemon: small jobs sent
64 at a time from threads, so the engine batches them (server/engine/batch_reduce.c: the _batch kernels),
each answered on "backend":"cuda" and again on "backend":"emu"; the data must be the same bits (f32 "a - b"
as base64: its order shows). Ends with "anywidth_http: N passed, N failed". Standard library only."""
import base64, json, random, struct, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor

URL = sys.argv[1]

def post(path, body):
    req = urllib.request.Request(URL + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)

def job(args):
    fam, w, n, seed = args
    rnd = random.Random(seed)
    xs = [rnd.uniform(-4, 4) for _ in range(n)]
    body = {"family": fam, "type": "f32", "op": "a - b", "output": "b64",
            "data_b64": base64.b64encode(struct.pack("<%df" % n, *xs)).decode()}
    body["block" if fam.startswith("block") else "width"] = w
    if fam.endswith("scan"): body["init"] = 0.5
    path = "/v1/scan" if fam.endswith("scan") else "/v1/reduce"
    c, e = post(path, dict(body, backend="cuda")), post(path, dict(body, backend="emu"))
    ok = c.get("backend") == "cuda" and "data_b64" in c and c.get("data_b64") == e.get("data_b64")
    return ok, f"{fam} w{w} n={n}: cuda {str(c)[:200]} emu {str(e)[:120]}", c.get("batch", {}).get("size", 1)

cases = [(fam, w, n, w * 1000 + n) for fam in ("warp_reduce", "warp_scan") for w in range(1, 33) for n in (5, 97, 1000)]
cases += [(fam, b, n, b * 1000 + n) for fam in ("block_reduce", "block_scan") for b in (1, 7, 33, 100, 1000) for n in (5, 97, 2500)]
passed = failed = batched = 0
with ThreadPoolExecutor(64) as pool:
    for ok, what, size in pool.map(job, cases):
        batched += size > 1
        if ok:
            passed += 1
        else:
            failed += 1
            if failed <= 8: print("FAIL", what)
print(f"{batched} of {len(cases)} cuda jobs ran in a batch of more than one")
print(f"anywidth_http: {passed} passed, {failed} failed")
