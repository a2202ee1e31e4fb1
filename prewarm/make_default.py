#!/usr/bin/env python3
"""Writes prewarm/default.json, the default prewarm set, from GET /v1/families:

    curl -s localhost:8080/v1/families | python3 prewarm/make_default.py > prewarm/default.json

The set: every warp family that compiles (not the emulator-only ones) x every type it takes, at
width 32 with its default operator; plus device_reduce and device_scan for every type x builtin
operator (bitwise ones for integer types only); and histogram for every type at the block it runs
(512: strategy smem, and atomic for f32, the one past 12288 bins). tests/api/prewarm.sh checks the file still covers
exactly that."""
import json
import sys

BITWISE = {"and", "or", "xor"}
FLOATS = {"f32", "f64", "f16", "bf16"}
DATA_FAMILIES = ["device_reduce", "device_scan"]


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
        for t in f["types"]:
            for op in f["ops"]:
                if op in BITWISE and t in FLOATS:
                    continue
                specs.append({"family": name, "type": t, "op": op})
    if "histogram" in by_name:
        for t in by_name["histogram"]["types"]:
            specs.append({"family": "histogram", "type": t, "block": 512, "strategy": "smem"})
        specs.append({"family": "histogram", "type": "f32", "block": 512, "strategy": "atomic"})
    return specs


def main():
    families = json.load(sys.stdin)["families"]
    doc = {
        "description": "warpd's default prewarm set (prewarm/make_default.py): every warp family x type at "
        "width 32, device_reduce / device_scan for every type x builtin operator, and histogram for every type",
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
