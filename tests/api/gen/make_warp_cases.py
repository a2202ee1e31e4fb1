#!/usr/bin/env python3
"""Writes tests/api/cases/warp.json: /v1/warp cases whose expectations come from direct formulas
here (independent of the C emulator). Run it again after changing a case; the JSON is what CI reads."""
import json, os

def iota(n): return list(range(n))
def case(name, body, expect, status=200):
    return {"name": name, "method": "POST", "path": "/v1/warp", "body": body,
            "expect": {"status": status, "json": expect}}
def err(name, body, code, field, status=400):
    return case(name, body, {"error": {"code": code, "field": field, "message": {"$type": "string"}}}, status)

cases = []
xor16 = [i ^ 1 for i in range(32)]
cases.append(case("shfl_xor w16 lane_mask 1 (README example)",
    {"family": "shfl_xor", "type": "i32", "width": 16, "mask": "0xffffffff", "args": {"lane_mask": 1}, "input": {"iota": 32}},
    {"output": xor16, "source_lane": xor16, "defined": [True] * 32, "undefined_reason": [None] * 32,
     "backend": "emu", "key": "shfl_xor/i32/w16/m0xffffffff/sm_90", "hash": {"$type": "string"},
     "cache": "*", "family": "shfl_xor", "type": "i32", "width": 16, "mask": "0xffffffff", "lanes": 32,
     "timing": {"parse_us": {"$type": "number"}, "compile_ms": {"$type": "number"}, "kernel_us": {"$type": "number"},
                "total_us": {"$type": "number"}}}))
cases.append(case("broadcast from lane 0", {"family": "shfl", "args": {"src_lane": 0}, "input": [7] + [1] * 31},
    {"output": [7] * 32, "source_lane": [0] * 32}))
cases.append(case("broadcast from lane 5 width 8",
    {"family": "shfl", "width": 8, "args": {"src_lane": 5}, "input": {"iota": 32}},
    {"output": [(i & ~7) + 5 for i in range(32)]}))
cases.append(case("idx wraps modulo width (src_lane 19, width 16; -1 -> 15)",
    {"family": "shfl", "width": 16, "args": {"src_lane": [19] * 16 + [-1] * 16}, "input": {"iota": 32}},
    {"output": [3] * 16 + [31] * 16}))
cases.append(case("shift up by 1", {"family": "shfl_up", "args": {"delta": 1}, "input": {"iota": 32}},
    {"output": [0] + iota(31), "source_lane": [0] + iota(31)}))
cases.append(case("shift up by 3 width 8 keeps own values at segment start",
    {"family": "shfl_up", "width": 8, "args": {"delta": 3}, "input": {"iota": 32}},
    {"output": [i if i % 8 < 3 else i - 3 for i in range(32)]}))
cases.append(case("shift down by 1", {"family": "shfl_down", "args": {"delta": 1}, "input": {"iota": 32}},
    {"output": iota(32)[1:] + [31]}))
cases.append(case("shift down by 2 width 4", {"family": "shfl_down", "width": 4, "args": {"delta": 2}, "input": {"iota": 32}},
    {"output": [i + 2 if i % 4 < 2 else i for i in range(32)]}))
cases.append(case("rotate (src_lane = lane + 2)", {"family": "shfl", "args": {"src_lane": [i + 2 for i in range(32)]}, "input": {"iota": 32}},
    {"output": [(i + 2) % 32 for i in range(32)]}))
cases.append(case("butterfly xor 16", {"family": "shfl_xor", "args": {"lane_mask": 16}, "input": {"iota": 32}},
    {"output": [i ^ 16 for i in range(32)]}))
xor8w8 = [i if ((i ^ 8) > (i & ~7) + 7) else i ^ 8 for i in range(32)]
cases.append(case("xor past the segment edge: later segment keeps own, earlier segment is read",
    {"family": "shfl_xor", "width": 8, "args": {"lane_mask": 8}, "input": {"iota": 32}},
    {"output": xor8w8, "defined": [True] * 32}))
cases.append(case("source lane outside the mask is undefined",
    {"family": "shfl_xor", "mask": "0x0000ffff", "args": {"lane_mask": 16}, "input": {"iota": 32}},
    {"output": [None] * 32, "defined": [False] * 32,
     "undefined_reason": ["src_not_member"] * 16 + ["not_member"] * 16}))
cases.append(case("source lane returned early is undefined",
    {"family": "shfl", "args": {"src_lane": 1}, "active": "0x55555555", "input": {"iota": 32}},
    {"output": [None] * 32, "undefined_reason": [("src_inactive" if i % 2 == 0 else "inactive") for i in range(32)]}))
cases.append(case("partial last warp (n = 40): lanes past n in the second warp do not exist",
    {"family": "shfl_down", "args": {"delta": 4}, "input": {"iota": 40}},
    {"lanes": 40, "output": [i + 4 for i in range(28)] + [28, 29, 30, 31] + [36, 37, 38, 39, None, None, None, None],
     "undefined_reason": [None] * 36 + ["src_inactive"] * 4}))
cases.append(case("per-lane arrays are shuffled element by element",
    {"family": "shfl_xor", "args": {"lane_mask": 1}, "input": [[i, 100 + i, 200 + i] for i in range(32)]},
    {"elems": 3, "output": [[i ^ 1, 100 + (i ^ 1), 200 + (i ^ 1)] for i in range(32)]}))
cases.append(case("element swap between paired lanes",
    {"family": "swap", "args": {"lane_mask": 1, "first": 0, "second": 3}, "input": [[10 * i + e for e in range(4)] for i in range(32)]},
    {"output": [[10 * (i ^ 1) + 3, 10 * i + 1, 10 * i + 2, 10 * (i ^ 1) + 0] for i in range(32)]}))
b = [0] * 4
for i in range(128):
    if 42 < i < 53: b[i // 32] |= 1 << (i % 32)
cases.append(case("ballot of 42 < x < 53 over 128 threads",
    {"family": "ballot", "type": "i32", "args": {"pred": {"op": "between", "lo": 42, "hi": 53}}, "input": {"iota": 128}},
    {"lanes": 128, "output": ["0x%08x" % b[i // 32] for i in range(128)]}))
cases.append(case("activemask with the odd lanes returned early",
    {"family": "activemask", "active": [i % 2 == 0 for i in range(32)]},
    {"output": ["0x55555555" if i % 2 == 0 else None for i in range(32)],
     "undefined_reason": [None if i % 2 == 0 else "inactive" for i in range(32)]}))
cases.append(case("vote_all gt 0 is false when lane 0 holds 0", {"family": "vote_all", "args": {"pred": {"op": "gt", "value": 0}}, "input": {"iota": 32}},
    {"output": [False] * 32}))
cases.append(case("vote_any eq 17", {"family": "vote_any", "args": {"pred": {"op": "eq", "value": 17}}, "input": {"iota": 32}},
    {"output": [True] * 32}))
cases.append(case("vote_uni over width 8 tiles", {"family": "vote_uni", "width": 8, "args": {"pred": {"op": "ge", "value": 12}}, "input": {"iota": 32}},
    {"output": [True] * 8 + [False] * 8 + [True] * 16}))
vals = ["0.0", "-0.0", 1.5, 1.5] * 8
def grp(i):
    m = 0
    for j in range(32):
        if vals[j] == vals[i]: m |= 1 << j
    return "0x%08x" % m
cases.append(case("match_any compares bits: +0 and -0 differ",
    {"family": "match_any", "type": "f32", "input": vals}, {"output": [grp(i) for i in range(32)]}))
cases.append(case("match_all of equal values",
    {"family": "match_all", "type": "u32", "input": [9] * 32}, {"output": ["0xffffffff"] * 32, "pred": [True] * 32}))
cases.append(case("redux sum", {"family": "redux", "type": "i32", "op": "sum", "input": {"iota": 32}}, {"output": [496] * 32}))
cases.append(case("redux min on u32 over width 4 tiles", {"family": "redux", "type": "u32", "width": 4, "op": "min", "input": {"iota": 32}},
    {"output": [i & ~3 for i in range(32)]}))
cases.append(case("warp_allreduce sum f32", {"family": "warp_allreduce", "type": "f32", "op": "sum", "input": {"iota": 32}},
    {"output": [496] * 32, "key": "warp_allreduce/f32/w32/m0xffffffff/op=sum/sm_90"}))
cases.append(case("warp_allreduce max width 16", {"family": "warp_allreduce", "type": "i32", "width": 16, "op": "max", "input": {"iota": 32}},
    {"output": [15] * 16 + [31] * 16}))
cases.append(case("warp_allreduce expression", {"family": "warp_allreduce", "type": "i64", "width": 2, "op": "a - b", "input": {"iota": 32}},
    {"output": [str(-1 if i % 2 == 0 else 1) for i in range(32)]}))
cases.append(case("64-bit values travel as strings", {"family": "shfl_xor", "type": "u64", "args": {"lane_mask": 1},
    "input": [str(2**64 - 1 - i) for i in range(32)]}, {"output": [str(2**64 - 1 - (i ^ 1)) for i in range(32)]}))
cases.append(case("NaN and infinities travel as strings", {"family": "shfl_xor", "type": "f32", "args": {"lane_mask": 1},
    "input": ["NaN", "Infinity", "-Infinity", 2.5] * 8}, {"output": ["Infinity", "NaN", 2.5, "-Infinity"] * 8}))
cases.append(case("f16 values", {"family": "shfl_down", "type": "f16", "args": {"delta": 16}, "input": [0.5 * i for i in range(32)]},
    {"output": [0.5 * (i + 16) if i < 16 else 0.5 * i for i in range(32)]}))
cases.append(case("random input with a seed is repeatable", {"family": "shfl", "input": {"random": 32, "seed": 7}}, {"lanes": 32}))
cases.append(case("profile: true is accepted (emu times every step)", {"family": "shfl", "profile": True}, {"lanes": 32}))
cases.append(case("ask for the emulator explicitly", {"family": "shfl", "backend": "emu"}, {"backend": "emu"}))

# Errors: each names the field.
cases += [
    err("unknown field", {"family": "shfl", "colour": 1}, "unknown_field", "colour"),
    err("missing family", {"type": "i32"}, "missing_field", "family"),
    err("unknown family", {"family": "shuffle"}, "unknown_family", "family"),
    err("width wrong type", {"family": "shfl", "width": "16"}, "wrong_type", "width"),
    err("profile not a boolean", {"family": "shfl", "profile": "yes"}, "wrong_type", "profile"),
    err("width not a power of two", {"family": "shfl", "width": 12}, "bad_width", "width"),
    err("width 64", {"family": "shfl", "width": 64}, "bad_width", "width"),
    err("unknown type", {"family": "shfl", "type": "f128"}, "unknown_type", "type"),
    err("type not allowed for match", {"family": "match_any", "type": "f16"}, "type_not_allowed", "type"),
    err("type not allowed for redux", {"family": "redux", "type": "f32"}, "type_not_allowed", "type"),
    err("mask wider than 32 bits", {"family": "shfl", "mask": "0x1ffffffff"}, "bad_mask", "mask"),
    err("mask not hex", {"family": "shfl", "mask": "0xzz"}, "bad_mask", "mask"),
    err("mask negative number", {"family": "shfl", "mask": -1}, "bad_mask", "mask"),
    err("activemask takes no mask", {"family": "activemask", "mask": "0x0000ffff"}, "bad_mask", "mask"),
    err("xor on f32 is not allowed", {"family": "warp_allreduce", "type": "f32", "op": "xor"}, "bad_op", "op"),
    err("expression with an identifier", {"family": "warp_allreduce", "op": "system(1)"}, "bad_op", "op"),
    err("expression with a semicolon", {"family": "warp_allreduce", "op": "a; b"}, "bad_op", "op"),
    err("prod is not a redux op", {"family": "redux", "op": "prod"}, "op_not_allowed", "op"),
    err("op on a family without one", {"family": "shfl", "op": "sum"}, "unknown_field", "op"),
    err("too many lanes", {"family": "shfl", "input": {"iota": 1025}}, "out_of_range", "input.iota"),
    err("empty input list", {"family": "shfl", "input": []}, "bad_input", "input"),
    err("arrays on a family without them", {"family": "ballot", "input": [[1, 2]] * 32}, "bad_input", "input[0]"),
    err("array of 9 elements", {"family": "shfl", "input": [[1] * 9] * 32}, "bad_input", "input[0]"),
    err("ragged arrays", {"family": "shfl", "input": [[1, 2]] * 31 + [[1]]}, "bad_input", "input[31]"),
    err("bad value in input", {"family": "shfl", "input": [1, "x"]}, "bad_value", "input[1]"),
    err("i32 out of range", {"family": "shfl", "input": [2**31]}, "out_of_range", "input[0]"),
    err("64-bit number beyond 2^53 must be a string", {"family": "shfl", "type": "i64", "input": [2**60]}, "precision_loss", "input[0]"),
    err("active list of the wrong length", {"family": "shfl", "input": {"iota": 32}, "active": [True] * 31}, "bad_active", "active"),
    err("delta out of range", {"family": "shfl_up", "args": {"delta": 40}}, "out_of_range", "args.delta"),
    err("per-lane args of the wrong length", {"family": "shfl", "args": {"src_lane": [1, 2]}}, "bad_arg", "args.src_lane"),
    err("argument of another family", {"family": "shfl_up", "args": {"src_lane": 1}}, "unknown_field", "args.src_lane"),
    err("unknown predicate", {"family": "ballot", "args": {"pred": {"op": "odd"}}}, "bad_pred", "args.pred.op"),
    err("between without hi", {"family": "ballot", "args": {"pred": {"op": "between", "lo": 1}}}, "missing_field", "args.pred.hi"),
    err("swap index past the array", {"family": "swap", "input": [[1, 2]] * 32, "args": {"first": 2}}, "out_of_range", "args.first"),
    err("bad backend", {"family": "shfl", "backend": "tpu"}, "bad_value", "backend"),
    err("cuda backend when there is none", {"family": "shfl", "backend": "cuda"}, "backend_unavailable", "backend", 409),
]
cases.append({"name": "bad JSON", "method": "POST", "path": "/v1/warp", "body_text": "{\"family\": ",
              "expect": {"status": 400, "json": {"error": {"code": "bad_json", "field": "body"}}}})
cases.append({"name": "body is not an object", "method": "POST", "path": "/v1/warp", "body_text": "[1,2]",
              "expect": {"status": 400, "json": {"error": {"code": "bad_json"}}}})
cases.append({"name": "empty body", "method": "POST", "path": "/v1/warp", "body_text": "",
              "expect": {"status": 400, "json": {"error": {"code": "bad_json"}}}})
cases.append({"name": "nesting too deep", "method": "POST", "path": "/v1/warp", "body_text": "[" * 100 + "]" * 100,
              "expect": {"status": 400, "json": {"error": {"code": "too_deep", "field": "body"}}}})
cases.append({"name": "body over the 64 MiB limit", "method": "POST", "path": "/v1/warp",
              "body_repeat": {"text": " ", "count": 64 * 1024 * 1024 + 1},
              "expect": {"status": 413, "json": {"error": {"code": "body_too_large", "field": "body"}}}})

out = os.path.join(os.path.dirname(__file__), "..", "cases", "warp.json")
with open(out, "w") as f:
    json.dump(cases, f, indent=1)
    f.write("\n")
print(out, len(cases), "cases")
