#!/usr/bin/env python3
"""check_cache_file.py FILE HASH — exit 0 when FILE is a whole, valid warpd disk-cache entry for the key
HASH (64 hex): the layout server/compile/cache.c writes, "WPKC" | u32 version | u64 payload length |
sha256(payload) | payload, the payload starting with the 32-byte key. Says what is wrong otherwise."""
import hashlib
import struct
import sys

path, key_hex = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
problems = []
if len(data) < 48:
    problems.append(f"{len(data)} bytes, shorter than the 48-byte header")
else:
    magic, version, length = data[:4], *struct.unpack("<IQ", data[4:16])
    digest, payload = data[16:48], data[48:]
    if magic != b"WPKC":
        problems.append(f"magic {magic!r}")
    if length != len(payload):
        problems.append(f"payload length {length} in the header, {len(payload)} in the file (torn)")
    if hashlib.sha256(payload).digest() != digest:
        problems.append("sha256 of the payload does not match the header")
    if payload[:32] != bytes.fromhex(key_hex):
        problems.append("the payload's key is not " + key_hex)
    if version < 1:
        problems.append(f"format version {version}")
if problems:
    print(f"{path}: " + "; ".join(problems))
    sys.exit(1)
print(f"{path}: valid ({len(data)} bytes)")
