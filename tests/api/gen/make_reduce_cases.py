#!/usr/bin/env python3
"""Writes tests/api/cases/reduce.json: /v1/reduce and /v1/scan cases — every input form (JSON, base64,
raw octet-stream, buffer id, generated) and every error the endpoints own — whose expected values are
computed here, in Python (struct for IEEE rounding, a splitmix64 copy for generated data), independent
of the C emulator. Run it again after changing a case; the JSON is what CI reads (tests/api/api.sh)."""
import base64, json, os, struct

def f32(x): return struct.unpack("<f", struct.pack("<f", x))[0]
def f32sum(xs):
    acc = f32(xs[0])
    for x in xs[1:]: acc = f32(acc + f32(x))
    return acc
def i32(x): return (x + 2**31) % 2**32 - 2**31
def b64(fmt, xs): return base64.b64encode(struct.pack("<" + fmt * len(xs), *xs)).decode()
def splitmix(seed, i):
    m = 2**64 - 1
    z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)

NUM, STR = {"$type": "number"}, {"$type": "string"}
TIMING = {"parse_us": NUM, "upload_us": NUM, "compile_ms": NUM, "kernel_us": NUM, "download_us": NUM, "total_us": NUM}

def case(name, path, body, expect, status=200, headers=None, body_text=None):
    c = {"name": name, "method": "POST", "path": path}
    if headers: c["headers"] = headers
    if body_text is not None: c["body_text"] = body_text
    else: c["body"] = body
    c["expect"] = {"status": status, "json": expect}
    return c
def red(name, body, expect, status=200): return case(name, "/v1/reduce", body, expect, status)
def scan(name, body, expect, status=200): return case(name, "/v1/scan", body, expect, status)
def err(path, name, body, code, field, status=400):
    return case(name, path, body, {"error": {"code": code, "field": field, "message": STR}}, status)

cases = []
# ---- inline JSON, every builtin operator, 64-bit integers as strings ----
cases.append(red("README example: f32 sum inline", {"type": "f32", "op": "sum", "data": [1.5, 2, 3]},
    {"family": "device_reduce", "type": "f32", "op": "sum", "value": 6.5, "count": 3, "backend": "emu",
     "device": STR, "strategy": "shfl_down", "deterministic": True, "block": 256, "grid": 1,
     "key": "device_reduce/f32/op=sum/shfl_down/b256/sm_90", "hash": STR, "cache": "none", "timing": TIMING}))
ints = [5, -3, 12, 7, -8, 2]
for op, want in [("sum", sum(ints)), ("min", min(ints)), ("max", max(ints)), ("prod", i32(5 * -3 * 12 * 7 * -8 * 2)),
                 ("and", 5 & -3 & 12 & 7 & -8 & 2), ("or", 5 | -3 | 12 | 7 | -8 | 2), ("xor", 5 ^ -3 ^ 12 ^ 7 ^ -8 ^ 2)]:
    cases.append(red(f"i32 {op}", {"type": "i32", "op": op, "data": ints}, {"value": want, "count": 6}))
cases.append(red("i32 sum wraps", {"type": "i32", "op": "sum", "data": [2147483647, 1]}, {"value": -2147483648}))
cases.append(red("i64 beyond 2^53 travels as strings", {"type": "i64", "op": "sum", "data": ["9007199254740993", "1"]},
    {"value": "9007199254740994"}))
cases.append(red("u64 sum wraps", {"type": "u64", "op": "sum", "data": ["18446744073709551615", "2"]}, {"value": "1"}))
cases.append(red("expression operator", {"type": "i32", "op": "max(a, b) * 1", "data": [3, 9, 4]},
    {"op": "(max(a, b) * 1)", "value": 9}))
cases.append(red("f64 sum with check", {"type": "f64", "op": "sum", "data": [0.1] * 10, "check": True},
    {"check": {"reference": NUM, "rel_error": {"$le": 1e-15}}}))
# "profile" (device timing events on cuda): on emu every step is timed anyway; not a boolean is a 400
cases.append(red("profile: true on emu times every step", {"type": "f32", "op": "sum", "data": [1, 2], "profile": True},
    {"value": 3, "timing": TIMING}))
cases.append(err("/v1/reduce", "profile: not a boolean", {"type": "f32", "op": "sum", "data": [1], "profile": 1},
    "wrong_type", "profile"))
cases.append(err("/v1/scan", "scan profile: not a boolean", {"type": "f32", "op": "sum", "data": [1], "profile": "yes"},
    "wrong_type", "profile"))
cases.append(red("i32 check is exact", {"type": "i32", "op": "prod", "data": [3, 5, 7], "check": True},
    {"value": 105, "check": {"reference": 105, "exact": True}}))
# f16: 2048 + 1 + 1 is 2050 in f32 but stays 2048 when every sum rounds to f16
cases.append(red("f16 accumulates in f32 by default", {"type": "f16", "op": "sum", "data": [2048, 1, 1]},
    {"value": 2050, "accumulate": "f32", "accumulator": {"type": "f32", "value": 2050}}))
cases.append(red("f16 accumulate native rounds every step", {"type": "f16", "op": "sum", "accumulate": "native", "data": [2048, 1, 1]},
    {"value": 2048, "accumulate": "native", "key": "device_reduce/f16/op=sum/shfl_down/b256/acc=native/sm_90"}))
# ---- NaN: min/max skip it unless every value is NaN (fminf/fmaxf) ----
cases.append(red("max skips NaN", {"type": "f32", "op": "max", "data": [1, "NaN", 3]}, {"value": 3}))
cases.append(red("min skips NaN", {"type": "f64", "op": "min", "data": ["NaN", 2, -1, "NaN"]}, {"value": -1}))
cases.append(red("max of all NaN is NaN", {"type": "f32", "op": "max", "data": ["NaN", "NaN"]}, {"value": "NaN"}))
cases.append(red("sum with NaN is NaN", {"type": "f32", "op": "sum", "data": [1, "NaN"]}, {"value": "NaN"}))
# ---- empty data: the operator's identity, count 0 ----
for ty, op, want in [("f32", "sum", 0), ("f32", "prod", 1), ("f32", "max", "-Infinity"), ("f64", "min", "Infinity"),
                     ("i32", "min", 2147483647), ("i32", "max", -2147483648), ("u32", "and", 4294967295),
                     ("u64", "or", "0"), ("i64", "max", "-9223372036854775808")]:
    cases.append(red(f"empty {ty} {op} is the identity", {"type": ty, "op": op, "data": []},
        {"value": want, "count": 0, "empty": True}))
cases.append(red("empty with an expression has no identity", {"type": "i32", "op": "a + b", "data": []},
    {"value": None, "count": 0, "empty": True}))
# ---- "data" read in place (no cJSON node per value): the edge forms give what cJSON gives ----
def raw_json(name, path, text, expect, status=200):
    return case(name, path, None, expect, status, headers={"Content-Type": "application/json"}, body_text=text)
cases.append(red("data: NaN and infinities as strings", {"type": "f32", "op": "max", "data": [1, "Infinity", "NaN"]},
    {"value": "Infinity", "count": 3}))
cases.append(red("data: -Infinity and +Infinity", {"type": "f64", "op": "min", "data": ["+Infinity", "-Infinity", 2]},
    {"value": "-Infinity"}))
cases.append(red("data: type after data, read again as i64", {"op": "sum", "data": ["9007199254740993", "1"], "type": "i64"},
    {"type": "i64", "value": "9007199254740994", "count": 2}))
cases.append(case("data: type after data, a value it refuses names its index", "/v1/reduce",
    {"op": "sum", "data": [1, 2.5], "type": "i32"},
    {"error": {"code": "bad_value", "field": "data[1]", "message": "data[1]: 2.5 is not an integer"}}, 400))
cases.append(red("data: a {bits} object among numbers", {"type": "f32", "op": "sum", "data": [{"bits": "0x3f800000"}, 2]},
    {"value": 3}))
cases.append(raw_json("data: an escaped string", "/v1/reduce", '{"type":"i32","op":"sum","data":[1,"\\u0032"]}', {"value": 3}))
cases.append(red("data: f32 numbers round through a double", {"type": "f32", "op": "max", "data": [1.0000000596046448]},
    {"value": 1}))
cases.append(raw_json("data: an f32 number past the midpoint by less than a double's ulp rounds to 1",
    "/v1/reduce", '{"type":"f32","op":"max","data":[1.0000000596046447753906250000000001]}', {"value": 1}))
cases.append(red("data: an f32 string rounds once (strtof)", {"type": "f32", "op": "max",
    "data": ["1.0000000596046447753906250000000001"]}, {"value": 1.0000001}))
cases.append(red("data: f16 rounds 65519 to 65504 (printed as the shortest f16: 65500)",
    {"type": "f16", "op": "max", "data": [65519]}, {"value": 65500, "accumulator": {"value": 65504}}))
cases.append(red("data: f16 65520 is infinity", {"type": "f16", "op": "min", "data": [65520]}, {"value": "Infinity"}))
cases.append(red("data: bf16 ties to even", {"type": "bf16", "op": "max", "data": [1.00390625]}, {"value": 1}))
cases.append(red("data: bf16 above the tie", {"type": "bf16", "op": "max", "data": [1.0039063]},
    {"value": 1.01, "accumulator": {"value": 1.0078125}}))
cases.append(raw_json("data: number forms cJSON reads (1. -.5 01 1E2)", "/v1/reduce",
    '{"type":"f64","op":"sum","data":[1., -.5, 01, 1E2]}', {"value": 101.5, "count": 4}))
cases.append(raw_json("data: control characters count as whitespace", "/v1/reduce",
    '{"type":"i32","op":"sum","data":[1,\u0001 2,\t3\r\n]}', {"value": 6}))
cases.append(raw_json("data: the first of two data keys", "/v1/reduce", '{"type":"i32","op":"sum","data":[1],"data":[5]}',
    {"value": 1}))
cases.append(raw_json("data: an escaped key that reads as data comes first", "/v1/reduce",
    '{"type":"i32","op":"sum","d\\u0061ta":[7],"data":[1]}', {"value": 7}))
cases.append(raw_json("data: bad JSON inside the list is bad_json, with cJSON's position", "/v1/reduce",
    '{"type":"f32","data":[1,]}', {"error": {"code": "bad_json", "field": "body", "message": "invalid JSON near byte 24"}}, 400))
cases.append(raw_json("data: bad JSON in the list comes before an unknown field", "/v1/reduce",
    '{"colour":1,"type":"f32","data":[1,]}', {"error": {"code": "bad_json", "field": "body", "message": STR}}, 400))
cases.append(case("data: -0 is negative for u32", "/v1/reduce", {"type": "u32", "op": "sum", "data": [-0.0]},
    {"error": {"code": "out_of_range", "field": "data[0]", "message": "data[0]: -0 is negative for u32"}}, 400))
cases.append(raw_json("data: beyond 2^53 as a number (2^53 + 2)", "/v1/reduce",
    '{"type":"i64","op":"sum","data":[1, 9007199254740994]}',
    {"error": {"code": "precision_loss", "field": "data[1]", "message": STR}}, 400))
cases.append(err("/v1/reduce", "data: a literal", {"type": "f32", "op": "sum", "data": [1, True]}, "wrong_type", "data[1]"))
nested = [1]
for _ in range(70): nested = [nested]
cases.append(err("/v1/reduce", "data: nesting deeper than --max-depth", {"type": "f32", "data": nested}, "too_deep", "body"))
cases.append(err("/v1/reduce", "data: not a list", {"type": "f32", "data": "1,2"}, "wrong_type", "data"))
# ---- base64 ----
cases.append(red("data_b64 f32", {"type": "f32", "op": "sum", "data_b64": b64("f", [1, 2, 3, 4])}, {"value": 10, "count": 4}))
cases.append(red("data_b64 i64", {"type": "i64", "op": "max", "data_b64": b64("q", [-5, 2**40, 7])}, {"value": str(2**40)}))
# ---- raw octet-stream: ASCII bytes, so the case file can carry them ----
aaaa, bbbb = struct.unpack("<f", b"AAAA")[0], struct.unpack("<f", b"BBBB")[0]
cases.append(case("raw f32 body with ?type&op", "/v1/reduce?type=f32&op=sum", None,
    {"value": {"$ge": f32sum([aaaa, bbbb]) - 1e-5, "$le": f32sum([aaaa, bbbb]) + 1e-5}, "count": 2}, headers={"Content-Type": "application/octet-stream"}, body_text="AAAABBBB"))
cases.append(case("raw u32 max", "/v1/reduce?type=u32&op=max", None, {"value": 0x43434343, "count": 3},
    headers={"Content-Type": "application/octet-stream"}, body_text="AAAACCCCBBBB"))
cases.append(case("raw i32 sum wraps", "/v1/reduce?type=i32&op=sum", None, {"value": i32(0x41414141 + 0x42424242)},
    headers={"Content-Type": "application/octet-stream"}, body_text="AAAABBBB"))
cases.append(case("raw body not a multiple of the element size", "/v1/reduce?type=f32&op=sum", None,
    {"error": {"code": "bad_length", "field": "body", "message": STR}}, 400,
    headers={"Content-Type": "application/octet-stream"}, body_text="AAAAB"))
cases.append(case("raw body: an unknown type, answered before the body", "/v1/reduce?type=f99&op=sum", None,
    {"error": {"code": "unknown_type", "field": "type", "message": STR}}, 400,
    headers={"Content-Type": "application/octet-stream"}, body_text="AAAABBBB"))
cases.append(case("raw body: a bad block for the family", "/v1/scan?family=block_scan&type=i32&op=sum&block=2000", None,
    {"error": {"code": "bad_block", "field": "block", "message": STR}}, 400,
    headers={"Content-Type": "application/octet-stream"}, body_text="AAAABBBB"))
c = case("raw body, chunked (gathered, not streamed)", "/v1/reduce?type=u32&op=max", None, {"value": 0x43434343, "count": 3},
    headers={"Content-Type": "application/octet-stream"}, body_text="AAAACCCCBBBB")
c["chunked"] = True
cases.append(c)
cases.append(case("raw body needs ?op", "/v1/reduce?type=f32", None,
    {"error": {"code": "missing_field", "field": "op", "message": STR}}, 400,
    headers={"Content-Type": "application/octet-stream"}, body_text="AAAA"))
c = case("scan raw in, raw out (Accept: application/octet-stream)", "/v1/scan?type=i32&op=sum", None, None,
    headers={"Content-Type": "application/octet-stream", "Accept": "application/octet-stream"},
    body_text="\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001")
c["expect"] = {"status": 200, "headers": {"Content-Type": "application/octet-stream"},
               "body_text": "\u0001\u0001\u0001\u0001\u0002\u0002\u0002\u0002"}
cases.append(c)
# ---- generated on the device ----
cases.append(red("generate iota", {"type": "i64", "op": "sum", "generate": {"kind": "iota", "n": 1000}},
    {"value": "499500", "count": 1000, "timing": {"generate_us": NUM}}))
cases.append(red("generate constant", {"type": "f32", "op": "sum", "generate": {"kind": "constant", "n": 4, "value": 2.5}},
    {"value": 10}))
cases.append(red("generate random (splitmix64, integers 0..999)", {"type": "i32", "op": "sum", "generate": {"kind": "random", "n": 5000, "seed": 9}},
    {"value": sum(splitmix(9, i) % 1000 for i in range(5000))}))
cases.append(red("generate random floats, checked", {"type": "f32", "op": "sum", "check": True,
    "generate": {"kind": "random", "n": 100000, "seed": 3}}, {"count": 100000, "check": {"rel_error": {"$le": 1e-5}}}))
cases.append(err("/v1/reduce", "n above the limit", {"type": "f32", "op": "sum", "generate": {"kind": "iota", "n": 2**40}},
    "too_many_elements", "generate.n", 413))
cases.append(err("/v1/reduce", "generate needs a kind", {"type": "f32", "generate": {"n": 3}}, "bad_value", "generate.kind"))
# ---- a buffer id ----
cases.append({"name": "reduce: upload a buffer", "method": "PUT", "path": "/v1/buffers",
    "body": {"type": "i32", "data": [4, 8, 15, 16, 23, 42]}, "expect": {"status": 201}, "save": {"rbuf": "$.id"}})
cases.append(red("reduce a buffer by id (its type)", {"buffer": "{{rbuf}}", "op": "sum"},
    {"type": "i32", "value": 108, "count": 6, "input_buffer": STR}))
cases.append(red("reduce the first 3 of a buffer", {"buffer": "{{rbuf}}", "op": "max", "count": 3}, {"value": 15, "count": 3}))
cases.append(scan("scan a buffer", {"buffer": "{{rbuf}}", "op": "sum"}, {"data": [4, 12, 27, 43, 66, 108]}))
cases.append(err("/v1/reduce", "buffer of another type", {"buffer": "{{rbuf}}", "type": "f32"}, "type_mismatch", "type"))
cases.append(err("/v1/reduce", "unknown buffer", {"buffer": "b-0000000000000000", "op": "sum"}, "unknown_buffer", "buffer", 404))
cases.append(scan("scan into a new buffer", {"type": "i32", "op": "sum", "data": [1, 2, 3], "output": "buffer"},
    {"out_count": 3, "buffer": {"id": STR, "type": "i32", "count": 3}}) | {"save": {"sbuf": "$.buffer.id"}})
cases.append({"name": "the scanned buffer holds the scan", "method": "GET", "path": "/v1/buffers/{{sbuf}}?data=1",
    "expect": {"status": 200, "json": {"data": [1, 3, 6]}}})
# ---- scans ----
xs = [3, 1, 4, 1, 5, 9, 2, 6]
pre = [sum(xs[:i + 1]) for i in range(len(xs))]
cases.append(scan("inclusive scan", {"type": "i32", "op": "sum", "data": xs},
    {"family": "device_scan", "exclusive": False, "data": pre, "out_count": 8, "strategy": "shfl_up"}))
cases.append(scan("exclusive scan starts at the identity", {"type": "i32", "op": "sum", "exclusive": True, "data": xs},
    {"exclusive": True, "data": [0] + pre[:-1]}))
cases.append(scan("exclusive max scan with init", {"type": "i32", "op": "max", "exclusive": True, "init": 4, "data": xs},
    {"data": [4] + [max([4] + xs[:i + 1]) for i in range(len(xs) - 1)]}))
cases.append(scan("inclusive scan with init", {"type": "i32", "op": "sum", "init": 100, "data": xs}, {"data": [100 + p for p in pre]}))
cases.append(scan("scan smem strategy", {"type": "i32", "op": "sum", "strategy": "smem", "data": xs},
    {"data": pre, "strategy": "smem", "key": "device_scan/u32/op=sum/smem/b256/inclusive/sm_90"}))
cases.append(scan("scan base64 in, base64 out", {"type": "f32", "op": "sum", "data_b64": b64("f", [1, 2, 3])},
    {"data_b64": b64("f", [1, 3, 6]), "data": {"$absent": True}}))
cases.append(scan("scan JSON in, base64 out on request", {"type": "i32", "op": "sum", "data": [1, 2], "output": "b64"},
    {"data_b64": b64("i", [1, 3])}))
cases.append(scan("warp_scan in groups of 4", {"family": "warp_scan", "type": "i32", "op": "sum", "width": 4, "data": list(range(1, 11))},
    {"data": [1, 3, 6, 10, 5, 11, 18, 26, 9, 19], "width": 4}))
cases.append(scan("block_scan exclusive, groups of 32", {"family": "block_scan", "type": "i32", "op": "sum", "block": 32, "exclusive": True,
    "data": [1] * 40}, {"data": list(range(32)) + list(range(8))}))
cases.append(scan("stencil radius 1 (0 where the window leaves)", {"family": "stencil", "type": "f64", "radius": 1, "weights": [1, 1, 1],
    "data": [1, 2, 3, 4, 5]}, {"data": [0, 6, 9, 12, 0], "radius": 1}))
cases.append(scan("scan check", {"type": "f32", "op": "sum", "check": True, "data": [0.5] * 100},
    {"check": {"max_rel_error": 0}}))
cases.append(err("/v1/scan", "exclusive scan of an expression needs init", {"type": "i32", "op": "a - b", "exclusive": True, "data": [1]},
    "init_required", "init"))
# ---- the other reduce families ----
cases.append(red("argmin: value and first index", {"family": "argmin", "type": "f32", "data": [3, -1, 2, -1, "NaN"]},
    {"family": "argmin", "value": -1, "index": 1}))
cases.append(red("argmax of all NaN", {"family": "argmax", "type": "f64", "data": ["NaN", "NaN"]}, {"value": "NaN", "index": 0}))
cases.append(red("warp_reduce groups of 8", {"family": "warp_reduce", "type": "i32", "op": "sum", "width": 8, "data": list(range(20))},
    {"data": [sum(range(0, 8)), sum(range(8, 16)), sum(range(16, 20))], "out_count": 3}))
cases.append(red("block_reduce groups of 64 (max)", {"family": "block_reduce", "type": "i32", "op": "max", "block": 64, "data": list(range(100))},
    {"data": [63, 99]}))
cases.append(red("segmented_reduce with an empty segment", {"family": "segmented_reduce", "type": "i32", "op": "sum",
    "offsets": [0, 2, 2, 5], "data": [1, 2, 3, 4, 5]}, {"data": [3, 0, 12]}))
cases.append(err("/v1/reduce", "offsets must not decrease", {"family": "segmented_reduce", "type": "i32", "offsets": [0, 3, 1], "data": [1, 2, 3]},
    "bad_offsets", "offsets[2]"))
# ---- strategies ----
for st in ["gmem", "smem", "shfl_xor", "shfl_down", "redux", "atomic"]:
    cases.append(red(f"strategy {st}", {"type": "i32", "op": "sum", "strategy": st, "data": list(range(1000))},
        {"value": 499500, "strategy": st, "deterministic": True}))
cases.append(red("atomic on floats says it is not deterministic", {"type": "f32", "op": "sum", "strategy": "atomic", "data": [1, 2]},
    {"value": 3, "deterministic": False}))
cases.append(red("block size is part of the key", {"type": "f32", "op": "max", "block": 128, "data": [1, 2]},
    {"block": 128, "key": "device_reduce/f32/op=max/shfl_down/b128/sm_90"}))
cases.append(red("compile on emu goes through NVRTC and the cache", {"type": "i32", "op": "sum", "compile": True, "data": [1, 2]},
    {"value": 3, "cache": {"$type": "string"}, "hash": STR}))
# ---- errors ----
cases.append(err("/v1/reduce", "xor on f32 names op", {"type": "f32", "op": "xor", "data": [1]}, "bad_op", "op"))
cases.append(err("/v1/reduce", "redux on f32", {"type": "f32", "op": "sum", "strategy": "redux", "data": [1]}, "strategy_not_allowed", "strategy"))
cases.append(err("/v1/reduce", "atomic with an expression", {"type": "i32", "op": "a + b", "strategy": "atomic", "data": [1]},
    "strategy_not_allowed", "strategy"))
cases.append(err("/v1/reduce", "unknown strategy", {"type": "i32", "strategy": "magic", "data": [1]}, "unknown_strategy", "strategy"))
cases.append(err("/v1/scan", "gmem is not a scan strategy", {"type": "i32", "strategy": "gmem", "data": [1]}, "strategy_not_allowed", "strategy"))
cases.append(err("/v1/reduce", "block must be a power of two", {"type": "i32", "block": 100, "data": [1]}, "bad_block", "block"))
cases.append(err("/v1/reduce", "two inputs at once", {"type": "i32", "data": [1], "data_b64": "AQAAAA=="}, "bad_request", "data"))
cases.append(err("/v1/reduce", "no input", {"type": "i32"}, "missing_field", "data"))
cases.append(err("/v1/reduce", "bad base64", {"type": "i32", "data_b64": "A*AA"}, "bad_base64", "data_b64"))
cases.append(err("/v1/reduce", "base64 not a multiple of the element size", {"type": "f32", "data_b64": "AQID"}, "bad_length", "data_b64"))
cases.append(err("/v1/reduce", "a bad element names its index", {"type": "i32", "data": [1, 2.5]}, "bad_value", "data[1]"))
cases.append(err("/v1/reduce", "scan family on /v1/reduce", {"family": "device_scan", "data": [1]}, "bad_family", "family"))
cases.append(err("/v1/reduce", "unknown field", {"type": "i32", "data": [1], "colour": "red"}, "unknown_field", "colour"))
cases.append(err("/v1/reduce", "init is for scans", {"type": "i32", "data": [1], "init": 3}, "unknown_field", "init"))
cases.append(err("/v1/scan", "weights must match the radius", {"family": "stencil", "radius": 2, "weights": [1, 1, 1], "data": [1.0]},
    "bad_weights", "weights"))
cases.append(err("/v1/warp", "/v1/warp refuses a data-parallel family", {"family": "device_reduce", "type": "f32"},
    "not_a_warp_primitive", "family"))
cases.append({"name": "families list device_reduce with its data schema", "method": "GET", "path": "/v1/families",
    "expect": {"status": 200, "json": {"families": {"$type": "array"}}}})

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "cases", "reduce.json"), "w") as f:
    json.dump(cases, f, indent=1)
    f.write("\n")
print(f"{len(cases)} cases")
