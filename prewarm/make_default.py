#!/usr/bin/env python3
"""Writes prewarm/default.json, the default prewarm set, from GET /v1/families:

    curl -s localhost:8080/v1/families | python3 prewarm/make_default.py > prewarm/default.json

The set: every warp family that compiles (not the emulator-only ones) x every type it takes, at
width 32 with its default operator; plus device_reduce and device_scan for every type x builtin
operator (bitwise ones for integer types only); plus device_reduce's statistics and norms for every
type, one op per kernel (mean, var and std share one: mean stands for the three); plus reduce_by_key with
i32 keys: f32 sum and max, i32 sum (at block 512, the one it runs); and histogram for every type at the block it runs (512: strategy smem,
and atomic for f32, the one past 12288 bins). tests/api/prewarm.sh checks the file still covers exactly that."""
import json
import sys

BITWISE = {"and", "or", "xor"}
FLOATS = {"f32", "f64", "f16", "bf16"}
DATA_FAMILIES = ["device_reduce", "device_scan"]
SAME_KERNEL_AS_MEAN = {"var", "std"}


def default_set(families):
    specs = []
    for f in families:
        if "data" in f or "cuda" not in f["backends"] or 32 not in f["widths"]:
            continue
        for t in f["types"]:
            specs.append({"family": f["name"], "type": t, "width": 32})
    by_name = {f["name"]: f for f in families}
    for name in DATA_FAMILIES:
        f = by_name[name]
        stats = f.get("stats", {}).get("ops", [])
        for t in f["types"]:
            for op in f["ops"]:
                if op in BITWISE and t in FLOATS or op in stats:
                    continue
                specs.append({"family": name, "type": t, "op": op})
        for t in f["types"]:
            for op in stats:
                if op not in SAME_KERNEL_AS_MEAN:
                    specs.append({"family": name, "type": t, "op": op})
    # Transform-reduce (maps and dot products): sums of squares, dot products and a scan of squares in f32 and f64.
    for name, spec in MAP_SPECS:
        if name in by_name and by_name[name].get("data", {}).get("map"):
            for t in ("f32", "f64"):
                specs.append({"family": name, "type": t, **spec})
    if "reduce_by_key" in by_name:
        for t in ["f32", "i32"]:
            for op in ["sum", "max"] if t == "f32" else ["sum"]:
                specs.append({"family": "reduce_by_key", "type": t, "op": op, "block": 512, "keys": {"type": "i32"}})
    if "histogram" in by_name:
        for t in by_name["histogram"]["types"]:
            specs.append({"family": "histogram", "type": t, "block": 512, "strategy": "smem"})
        specs.append({"family": "histogram", "type": "f32", "block": 512, "strategy": "atomic"})
    return specs


MAP_SPECS = [("device_reduce", {"op": "sum", "map": "x*x"}), ("device_reduce", {"op": "dot"}),
             ("device_scan", {"op": "sum", "map": "x*x"})]


def main():
    families = json.load(sys.stdin)["families"]
    doc = {
        "description": "warpd's default prewarm set (prewarm/make_default.py): every warp family x type at "
        "width 32, and device_reduce / device_scan for every type x builtin operator, and device_reduce's "
        "statistics and norms for every type (one op per kernel); reduce_by_key (i32 keys): f32 sum and max, i32 "
        "sum; histogram for every type",
        "specs": default_set(families),
    }
    out = json.dumps(doc, indent=1)
    # One spec per line: readable, and diffs stay small.
    lines = ['{', ' "description": ' + json.dumps(doc["description"]) + ',', ' "specs": [']
    lines += ['  ' + json.dumps(s) + (',' if i + 1 < len(doc["specs"]) else '') for i, s in enumerate(doc["specs"])]
    lines += [' ]', '}']
    assert json.loads("\n".join(lines)) == json.loads(out)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
