#!/usr/bin/env python3
"""Writes tests/api/cases/anywidth.json: warp_reduce and warp_scan at widths that are not powers of two
(CUB's logical warps at any width) over HTTP — every input form the endpoints read (JSON, base64, a raw
body with query arguments), short last groups, float results in the documented order (tree_up: offsets
1, 2, 4, .., docs/semantics.md), GET /v1/families' widths, and the widths each family refuses. Expected
values are computed here, in Python (struct for f32 rounding), independent of the C emulator. Run it
again after changing a case; the JSON is what CI reads (tests/api/api.sh)."""
import base64, json, os, struct

def f32(x): return struct.unpack("<f", struct.pack("<f", x))[0]
def i32(x): return (x + 2**31) % 2**32 - 2**31
def b64(fmt, xs): return base64.b64encode(struct.pack("<" + fmt * len(xs), *xs)).decode()

def tree_up(v, op):
    """CUB's order for a logical warp: for o = 1, 2, 4, .. lane l takes op(v[l], v[l+o]) when l + o < valid."""
    v, o = list(v), 1
    while o < len(v):
        for l in range(0, len(v) - o, 2 * o): v[l] = op(v[l], v[l + o])
        o *= 2
    return v[0]

def groups(xs, w): return [xs[i:i + w] for i in range(0, len(xs), w)]
def isum(g): return i32(sum(g))
def fsum(a, b): return f32(a + b)
def fsub(a, b): return f32(a - b)

def hs(v, op):
    """Hillis-Steele: for o = 1, 2, 4, .., v[i] = op(v[i-o], v[i]) for every i >= o at once."""
    v, o = list(v), 1
    while o < len(v):
        v = [op(v[i - o], v[i]) if i >= o else v[i] for i in range(len(v))]
        o *= 2
    return v

STR = {"$type": "string"}

def case(name, path, body, expect, status=200, headers=None, body_text=None, method="POST"):
    c = {"name": name, "method": method, "path": path}
    if headers: c["headers"] = headers
    if body_text is not None: c["body_text"] = body_text
    elif body is not None: c["body"] = body
    c["expect"] = {"status": status, "json": expect} if expect is not None else {"status": status}
    return c
def red(name, body, expect, status=200): return case(name, "/v1/reduce", body, expect, status)
def scan(name, body, expect, status=200): return case(name, "/v1/scan", body, expect, status)
def err(path, name, body, code, field):
    return case(name, path, body, {"error": {"code": code, "field": field, "message": STR}}, 400)

cases = []
ints = list(range(1, 21))
# ---- integers: every odd width, the last group short ----
for w in (3, 5, 7, 11, 13, 17, 19, 31):
    cases.append(red(f"warp_reduce i32 sum width {w}", {"family": "warp_reduce", "type": "i32", "op": "sum", "width": w, "data": ints},
        {"family": "warp_reduce", "width": w, "data": [isum(g) for g in groups(ints, w)], "out_count": len(groups(ints, w)),
         "key": f"warp_reduce/u32/w{w}/op=sum/shfl_down/b256/sm_90"}))
cases.append(red("warp_reduce width 6, max", {"family": "warp_reduce", "type": "i32", "op": "max", "width": 6, "data": [5, -3, 9, 1, 0, 2, -7, 4]},
    {"data": [9, 4]}))
# ---- floats in the documented order: "a - b" shows the order (it is neither associative nor commutative) ----
xs = [f32(x) for x in [1.5, -2.25, 3.0, 0.125, 7.75, -1.0, 2.5, 10.0, -0.5, 4.0, 0.75]]
for w in (3, 7, 11):
    cases.append(red(f"warp_reduce f32 'a - b' width {w}: tree_up order", {"family": "warp_reduce", "type": "f32", "op": "a - b", "width": w, "data": xs},
        {"data": [tree_up(g, fsub) for g in groups(xs, w)]}))
cases.append(red("warp_reduce f32 sum width 7 through base64", {"family": "warp_reduce", "type": "f32", "op": "sum", "width": 7, "data_b64": b64("f", xs)},
    {"data_b64": b64("f", [tree_up(g, fsum) for g in groups(xs, 7)])}))
# raw octet-stream: ASCII bytes (4 of one character per i32), so the case file can carry them
raw_text = "".join(chr(0x41 + i) * 4 for i in range(12))
raw_ints = [struct.unpack("<i", raw_text[4 * i:4 * i + 4].encode())[0] for i in range(12)]
cases.append(case("warp_reduce width 5 from a raw body", "/v1/reduce?family=warp_reduce&type=i32&op=sum&width=5",
    None, {"data_b64": b64("i", [isum(g) for g in groups(raw_ints, 5)]), "width": 5},
    headers={"Content-Type": "application/octet-stream"}, body_text=raw_text))
for st in ("smem", "gmem", "atomic", "redux"):
    cases.append(red(f"warp_reduce width 7 strategy {st}", {"family": "warp_reduce", "type": "i32", "op": "sum", "width": 7, "strategy": st, "data": ints},
        {"data": [isum(g) for g in groups(ints, 7)], "strategy": st}))
cases.append(red("warp_reduce width 7 with check", {"family": "warp_reduce", "type": "f32", "op": "sum", "width": 7, "data": xs, "check": True},
    {"check": {"max_rel_error": {"$le": 1e-6}}}))
cases.append(red("warp_reduce width 9, fewer elements than one group", {"family": "warp_reduce", "type": "i32", "op": "sum", "width": 9, "data": [4, 5]},
    {"data": [9], "out_count": 1}))
cases.append(red("warp_reduce width 9, empty", {"family": "warp_reduce", "type": "i32", "op": "sum", "width": 9, "data": []},
    {"out_count": 0}))
# ---- scans ----
for w in (3, 7):
    cases.append(scan(f"warp_scan i32 width {w}", {"family": "warp_scan", "type": "i32", "op": "sum", "width": w, "data": ints},
        {"data": [v for g in groups(ints, w) for v in hs(g, lambda a, b: i32(a + b))], "width": w}))
cases.append(scan("warp_scan width 5 exclusive with init", {"family": "warp_scan", "type": "i32", "op": "sum", "width": 5, "exclusive": True,
    "init": 100, "data": ints[:12]},
    {"data": [100 + sum(g[:i]) for g in groups(ints[:12], 5) for i in range(len(g))]}))
cases.append(scan("warp_scan f32 'a - b' width 6: Hillis-Steele", {"family": "warp_scan", "type": "f32", "op": "a - b", "width": 6, "data": xs},
    {"data": [v for g in groups(xs, 6) for v in hs(g, fsub)]}))
cases.append(scan("warp_scan width 7 smem", {"family": "warp_scan", "type": "i32", "op": "max", "width": 7, "strategy": "smem", "data": [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]},
    {"data": [3, 3, 4, 4, 5, 9, 9, 6, 6, 6], "strategy": "smem"}))
# ---- block_reduce / block_scan at any block size (CUB's BlockReduce/BlockScan): the group is `block` ----
def tree(v, op):
    """The halving tree: for o = P/2 .. 1 (P the power of two >= len), slot i < o takes op(v[i], v[i+o])."""
    v, p = list(v), 1
    while p < len(v): p *= 2
    o = p // 2
    while o > 0:
        for i in range(o):
            if i + o < len(v): v[i] = op(v[i], v[i + o])
        o //= 2
    return v[0]
def block_combine(g, op):
    """Tree per warp of 32, then tree over the warps' results (docs/semantics.md)."""
    return tree([tree(g[i:i + 32], op) for i in range(0, len(g), 32)], op)
ys = [f32(((i * 37) % 101) / 8 - 6) for i in range(250)]
cases.append(red("block_reduce block 7 (one partial warp per group)", {"family": "block_reduce", "type": "i32", "op": "sum", "block": 7, "data": ints},
    {"data": [isum(g) for g in groups(ints, 7)], "block": 32, "key": "block_reduce/u32/op=sum/shfl_down/b7/sm_90"}))
cases.append(red("block_reduce block 100 f32 'a - b': per warp, then over the warps", {"family": "block_reduce", "type": "f32", "op": "a - b", "block": 100, "data": ys},
    {"data": [block_combine(g, fsub) for g in groups(ys, 100)], "block": 128, "grid": 3}))
cases.append(red("block_reduce block 100 smem: one tree over the group", {"family": "block_reduce", "type": "f32", "op": "a - b", "block": 100, "strategy": "smem", "data": ys},
    {"data": [tree(g, fsub) for g in groups(ys, 100)]}))
cases.append(scan("block_scan block 3 exclusive", {"family": "block_scan", "type": "i32", "op": "sum", "block": 3, "exclusive": True, "data": ints[:8]},
    {"data": [sum(g[:i]) for g in groups(ints[:8], 3) for i in range(len(g))], "block": 32}))
cases.append(scan("block_scan block 40 inclusive", {"family": "block_scan", "type": "i32", "op": "sum", "block": 40, "data": list(range(100))},
    {"data": [sum(g[:i + 1]) for g in groups(list(range(100)), 40) for i in range(len(g))], "block": 64}))
cases.append(err("/v1/reduce", "block_reduce block 1025", {"family": "block_reduce", "type": "i32", "block": 1025, "data": [1]}, "bad_block", "block"))
cases.append(err("/v1/scan", "block_scan block 0", {"family": "block_scan", "type": "i32", "block": 0, "data": [1]}, "bad_block", "block"))
cases.append(err("/v1/reduce", "device_reduce keeps powers of two", {"type": "i32", "block": 100, "data": [1]}, "bad_block", "block"))
# ---- what each family takes, and what it refuses ----
cases.append(case("families: warp_reduce takes every width 1..32", "/v1/families", None, None, method="GET") |
    {"expect": {"status": 200, "body_contains": [
        '"kernel":"wp_warp_reduce","types":["i32","u32","i64","u64","f32","f64","f16","bf16"],"widths":[' + ",".join(map(str, range(1, 33))) + "]",
        '"kernel":"wp_warp_scan","types":["i32","u32","i64","u64","f32","f64","f16","bf16"],"widths":[' + ",".join(map(str, range(1, 33))) + "]",
        '"kernel":"wp_shfl_xor","types":["i32","u32","i64","u64","f32","f64","f16","bf16"],"widths":[1,2,4,8,16,32]',
        '"block_groups":true,"block_min":1,"block_max":1024']}})
for bad in (0, 33, 7.5, -3, 64):
    cases.append(err("/v1/reduce", f"warp_reduce width {bad}", {"family": "warp_reduce", "type": "i32", "width": bad, "data": [1]}, "bad_width", "width"))
cases.append(err("/v1/scan", "warp_scan width 40", {"family": "warp_scan", "type": "i32", "width": 40, "data": [1]}, "bad_width", "width"))
cases.append(err("/v1/reduce", "warp_reduce width as a string", {"family": "warp_reduce", "type": "i32", "width": "7", "data": [1]}, "wrong_type", "width"))
cases.append(case("warp_reduce width 7.5 as a query argument", "/v1/reduce?family=warp_reduce&type=i32&op=sum&width=7.5", None,
    {"error": {"code": "bad_width", "field": "width", "message": STR}}, 400, headers={"Content-Type": "application/octet-stream"}, body_text="AAAA"))
cases.append(err("/v1/reduce", "shfl_xor strategy needs a power-of-two width", {"family": "warp_reduce", "type": "f32", "width": 7, "strategy": "shfl_xor", "data": [1]},
    "strategy_not_allowed", "strategy"))
cases.append(err("/v1/warp", "shuffles keep the power-of-two rule", {"family": "shfl_xor", "type": "i32", "width": 7, "args": {"lane_mask": 1}, "input": {"iota": 32}},
    "bad_width", "width"))
cases.append(err("/v1/warp", "warp_allreduce keeps the power-of-two rule", {"family": "warp_allreduce", "type": "i32", "width": 3, "input": {"iota": 32}},
    "bad_width", "width"))

out = os.path.join(os.path.dirname(__file__), "..", "cases", "anywidth.json")
with open(out, "w") as f:
    json.dump(cases, f, indent=1)
    f.write("\n")
print(f"{len(cases)} cases -> {os.path.normpath(out)}")
