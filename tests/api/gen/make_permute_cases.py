#!/usr/bin/env python3
"""Writes tests/api/cases/permute.json: /v1/warp, /v1/compile and /v1/families cases for AMD's
ds_permute / ds_bpermute (emulator-only families). Expectations come from the ISA manuals' pseudocode,
written out below (independent of kernels/permute.c). Run it again after changing a case; the JSON
is what CI reads."""
import json, os

NONE = None  # a defined lane that received no lane's value: 0, source_lane null


def model(family, addr, inp, active, wave):
    """(output, source_lane, defined) per thread, straight from the ds_(b)permute_b32 pseudocode."""
    n = len(inp)
    out, src, dfn = [None] * n, [None] * n, [False] * n
    for base in range(0, n, wave):
        lanes = range(base, min(n, base + wave))
        exec_ = {t for t in lanes if active[t]}
        tmp = {}
        for t in lanes:
            j = base + (addr[t] & 0xffffffff) // 4 % wave
            if family == "ds_permute" and t in exec_:
                tmp[j] = t  # in lane order: the highest lane wins
            if family == "ds_bpermute" and j in exec_:
                tmp[t] = j
        for t in exec_:
            s = tmp.get(t)
            out[t], src[t], dfn[t] = (0 if s is None else inp[s]), s, True
    return out, src, dfn


def case(name, body, expect, status=200, path="/v1/warp"):
    return {"name": name, "method": "POST", "path": path, "body": body, "expect": {"status": status, "json": expect}}


def err(name, body, code, field, status=400, path="/v1/warp"):
    return case(name, body, {"error": {"code": code, "field": field, "message": {"$type": "string"}}}, status, path)


def run(name, family, wave, addr, inp, active=None, type_="i32", extra=None):
    n = len(inp)
    act = active if active is not None else [True] * n
    addr_list = addr if isinstance(addr, list) else [addr] * n
    out, src, dfn = model(family, addr_list, inp, act, wave)
    body = {"family": family, "type": type_, "width": wave, "args": {"addr": addr}, "input": inp}
    if active is not None:
        body["active"] = active
    expect = {"output": out, "source_lane": src, "defined": dfn,
              "undefined_reason": [None if d else "inactive" for d in dfn], "input": inp,
              "backend": "emu", "cache": "none", "key": {"$absent": True}, "family": family, "width": wave,
              "mask": "0xffffffff", "lanes": n}
    expect.update(extra or {})
    return case(name, body, expect)


iota = lambda n: list(range(n))
isa_in = [10, 11, 12, 13]  # the manuals' {A, B, C, D}
isa_addr = [0, 0, 12, 4]
cases = [
    # The ISA manuals' four-lane examples (EXEC 0xF and 0xA), literally.
    run("ISA example: ds_permute, EXEC 0xF -> {B, D, 0, C}", "ds_permute", 64, isa_addr, isa_in,
        extra={"output": [11, 13, 0, 12]}),
    run("ISA example: ds_permute, EXEC 0xA -> {-, D, -, 0}", "ds_permute", 64, isa_addr, isa_in,
        active=[False, True, False, True], extra={"output": [None, 13, None, 0]}),
    run("ISA example: ds_bpermute, EXEC 0xF -> {A, A, D, B}", "ds_bpermute", 64, isa_addr, isa_in,
        extra={"output": [10, 10, 13, 11]}),
    run("ISA example: ds_bpermute, EXEC 0xA -> {-, 0, -, B}", "ds_bpermute", 64, isa_addr, isa_in,
        active=[False, True, False, True], extra={"output": [None, 0, None, 11]}),
    # Rotate by one: the same addresses, opposite directions.
    run("rotate by one, forward (push to lane+1), wave 64", "ds_permute", 64, [(i + 1) * 4 for i in range(64)], iota(64),
        extra={"output": [63] + iota(63)}),
    run("rotate by one, backward (pull from lane+1), wave 64", "ds_bpermute", 64, [(i + 1) * 4 for i in range(64)],
        iota(64), extra={"output": iota(64)[1:] + [0]}),
    run("rotate by one, forward, wave 32 (two waves)", "ds_permute", 32, [((i % 32) + 1) * 4 for i in range(64)],
        iota(64), extra={"output": [31] + iota(31) + [63] + list(range(32, 63))}),
    run("rotate by one, backward, wave 32 (two waves)", "ds_bpermute", 32, [((i % 32) + 1) * 4 for i in range(64)],
        iota(64)),
    # Collisions and lanes nobody writes.
    run("collision: every lane writes lane 5, the highest wins, the rest get 0", "ds_permute", 64, 20, iota(64),
        extra={"output": [63 if i == 5 else 0 for i in range(64)]}),
    run("collision with the top lane inactive: lane 62 wins", "ds_permute", 64, 20, iota(64),
        active=[i != 63 for i in range(64)]),
    run("pairs: lanes 2k and 2k+1 write lane k; 2k+1 wins", "ds_permute", 64, [i // 2 * 4 for i in range(64)], iota(64)),
    # Address wrap: modulo wave*4, low bits ignored, negative = unsigned.
    run("addr -4 names the last lane (pull)", "ds_bpermute", 64, -4, iota(64), extra={"output": [63] * 64}),
    run("addr 132 is lane 1 of a wave32", "ds_bpermute", 32, 132, iota(64), extra={"output": [1] * 32 + [33] * 32}),
    run("addr 132 is lane 33 of a wave64", "ds_bpermute", 64, 132, iota(64), extra={"output": [33] * 64}),
    run("low address bits and bits above the wave are ignored", "ds_bpermute", 64, 2147483647, iota(64),
        extra={"output": [63] * 64}),
    # Inactive sources read as 0 (not undefined); several waves; a partial wave.
    run("pull from an inactive lane gives 0", "ds_bpermute", 32, 0, iota(32), active=[i != 0 for i in range(32)],
        extra={"output": [None] + [0] * 31}),
    run("broadcast lane 0 of each wave, 128 threads", "ds_bpermute", 64, 0, iota(128),
        extra={"source_lane": [0] * 64 + [64] * 64}),
    run("partial wave (n = 40): lane 0 gets 0 by push", "ds_permute", 64, [(i + 1) * 4 for i in range(40)], iota(40)),
    run("f32 bits move unchanged", "ds_bpermute", 32, [4, 8, 12, 0], [1.5, -2.25, "NaN", "-Infinity"], type_="f32",
        extra={"output": [-2.25, "NaN", "-Infinity", 1.5]}),
    # Errors and where these families run.
    err("width 16 is not a wave size", {"family": "ds_permute", "width": 16}, "bad_width", "width"),
    err("width 64 stays refused for CUDA families", {"family": "shfl", "width": 64}, "bad_width", "width"),
    err("no member mask", {"family": "ds_bpermute", "mask": "0x0000ffff"}, "bad_mask", "mask"),
    err("32-bit types only", {"family": "ds_permute", "type": "f64"}, "type_not_allowed", "type"),
    err("one value per lane", {"family": "ds_permute", "input": [[1, 2], [3, 4]]}, "bad_input", "input[0]"),
    err("the argument is addr", {"family": "ds_permute", "args": {"src_lane": 1}}, "unknown_field", "args.src_lane"),
    err("backend cuda on a daemon without one", {"family": "ds_permute", "backend": "cuda"}, "backend_unavailable",
        "backend", status=409),
    case("backend auto runs on emu", {"family": "ds_bpermute", "backend": "auto"}, {"backend": "emu", "cache": "none"}),
    err("nothing to compile", {"family": "ds_permute", "width": 64}, "not_compiled", "family", path="/v1/compile"),
    {"name": "families: ds_permute and ds_bpermute run on emu only, widths 32 and 64", "method": "GET",
     "path": "/v1/families", "expect": {"status": 200, "json": {"families": [
         "..."]}, "body_contains": [
         '{"name":"ds_permute","doc":"AMD ds_permute_b32', '"widths":[32,64],"wave":true,"mask":false',
         '"args":[{"name":"addr","default":0,"min":-2147483648,"max":2147483647,"per_lane":true}],"output":"value","backends":["emu"]}']}},
]

out = os.path.join(os.path.dirname(__file__), "..", "cases", "permute.json")
with open(out, "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(c, separators=(", ", ": ")) for c in cases) + "\n]\n")
print(out, len(cases), "cases")
