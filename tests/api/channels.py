#!/usr/bin/env python3
"""channels.py — doorbell channels (POST/GET/DELETE /v1/channels, engine/channels.h) against a live emu
daemon, driven as a client would: an object under /dev/shm registered as a region, a channel opened in
it, then requests written into its request area and req_seq bumped (a FUTEX_WAKE when the daemon says it
sleeps), the answer read once ans_seq matches. Run by tests/api/channels.sh, which starts the daemons.

  channels.py URL OBJ MODE [TOKEN]
  MODE main:     open (201, Location, the layout written into the region), list, get; reduce and scan
                 answers byte for byte HTTP's (timing and the batch aside) for every type, ops, inline data
                 and a region input; a sleeping channel woken (spin_us 0); refusals in the answer area
                 (req_route, req_len past the area, bad JSON, an answer too large for the area); refusals of
                 POST /v1/channels (missing/unknown fields, ranges, alignment, small, read-only region,
                 unknown region); DELETE; a region deleted under a channel closes it; ttl_s closes an idle
                 one; an object truncated under a live channel closes it (counted) and the daemon serves on;
                 messages never name /dev/shm.
  MODE limit:    (--channels-max 2) the third is 429 too_many_channels; closing one lets another open.
  MODE off:      (--channels-max 0) every route 403 channels_disabled.
  MODE shmoff:   (--shm off) 403 shm_disabled.
  MODE token:    (--token-file) 401 without the token; with it, a channel serves requests.
  MODE readonly: (the daemon as another user) a region it may only read: 403 read_only.
  MODE hammer:   (tests/api/mockcuda.sh) a buffer reduced through a channel until the daemon stops.
  MODE leave:    opens channels (one mid-sleep) and leaves them open: the daemon must stop cleanly.
Prints "channels: N passed, N failed"."""
import base64
import ctypes
import json
import mmap
import os
import random
import struct
import sys
import time
import urllib.error
import urllib.request

URL, OBJ, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
TOKEN = sys.argv[4] if len(sys.argv) > 4 else None
passed = failed = 0
made = []


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + what)
    else:
        failed += 1
        print("FAIL " + what)


def call(method, path, body=None, token=TOKEN):
    data = json.dumps(body).encode() if body is not None else None
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    r = urllib.request.Request(URL + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(r, timeout=30) as f:
            return f.status, json.loads(f.read()), dict(f.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}"), dict(e.headers)


def make_obj(tag, size, mode=0o600):
    name = f"/{OBJ}-{tag}"
    path = "/dev/shm" + name
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, mode)
    os.ftruncate(fd, size)
    mm = mmap.mmap(fd, size)
    os.close(fd)
    made.append(path)
    return name, path, mm


def region(tag, size=1 << 16):
    name, path, mm = make_obj(tag, size)
    st, r, _ = call("POST", "/v1/shm", {"name": name})
    assert st == 201, (st, r)
    return r["id"], path, mm


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


def u32(mm, off):
    return struct.unpack_from("<I", mm, off)[0]


def words(mm):  # the header as 32-bit words: one store a word (struct.pack_into zeroes the bytes first)
    return memoryview(mm)[:512].cast("I")


class Doorbell:
    """The client's side of a channel at byte 0 of mm (layout: engine/channels.h)."""

    def __init__(self, mm, info):
        self.mm, self.info = mm, info
        lay = info["layout"]
        self.rq, self.rmax, self.aq, self.amax = (lay["request_offset"], lay["request_bytes"],
                                                  lay["answer_offset"], lay["answer_bytes"])
        c = ctypes.c_char.from_buffer(mm)
        self.addr = ctypes.addressof(c)
        del c
        self.w = words(mm)

    def send(self, route, body, length=None):
        mm = self.mm
        b = body if isinstance(body, bytes) else json.dumps(body).encode()
        mm[self.rq:self.rq + len(b)] = b
        self.w[17], self.w[18] = route, len(b) if length is None else length  # req_route, req_len
        seq = (self.w[16] + 1) & 0xFFFFFFFF
        self.w[16] = seq  # req_seq, after the rest
        if u32(mm, 132):  # the daemon sleeps on req_seq: wake it
            LIBC.syscall(ctypes.c_long(202), ctypes.c_void_p(self.addr + 64), ctypes.c_int(1), ctypes.c_int(1),
                         None, None, ctypes.c_int(0))
        return seq

    def wait(self, seq, timeout=10.0):
        t0 = time.monotonic()
        while u32(self.mm, 192) != seq:
            if time.monotonic() - t0 > timeout:
                return None
            time.sleep(0.0001)
        n = u32(self.mm, 200)
        return u32(self.mm, 196), bytes(self.mm[self.aq:self.aq + n])

    def ask(self, route, body, length=None, timeout=10.0):
        got = self.wait(self.send(route, body, length), timeout)
        if got is None:
            return None, None
        return got[0], json.loads(got[1]) if got[1] else None


def same_answer(a, b):
    """Equal but for the timing and the batch (how long each step took, what ran beside it)."""
    strip = lambda d: {k: v for k, v in d.items() if k not in ("timing", "batch")}
    return strip(a) == strip(b)


def refused(st, body, status, code, field, what):
    e = (body or {}).get("error") or {}
    msg = json.dumps(body)
    check(st == status and e.get("code") == code and e.get("field", "") == field and e.get("message") and
          "/dev/shm" not in msg, f"{what}: {status} {code} field {field or '(none)'} "
          f"(got {st} {e.get('code')} {e.get('field')!r})")


def open_channel(rid, **kw):
    return call("POST", "/v1/channels", dict({"shm": {"id": rid}}, **kw))


def values(t, n, rng):
    if t in ("f32", "f64", "f16"):
        return [round(rng.uniform(-100, 100), 3) for _ in range(n)]
    if t == "bf16":
        return [float(rng.randint(-64, 64)) for _ in range(n)]
    lo, hi = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**53, 2**53), "u64": (0, 2**53)}[t]
    return [rng.randint(lo, hi) for _ in range(n)]


def main_checks():
    rid, path, mm = region("main")
    st, ch, hdr = open_channel(rid, spin_us=200)
    check(st == 201 and ch["id"].startswith("ch-") and len(ch["id"]) == 19, f"POST /v1/channels: 201 ({st} {ch})")
    check(hdr.get("Location") == "/v1/channels/" + ch["id"], f"Location {hdr.get('Location')}")
    lay = ch["layout"]
    check(bytes(mm[0:8]) == b"WARPDCH1" and u32(mm, 8) == 1 and u32(mm, 12) == lay["request_offset"] == 4096 and
          u32(mm, 16) == lay["request_bytes"] and u32(mm, 20) == lay["answer_offset"] and
          u32(mm, 24) == lay["answer_bytes"] and lay["request_bytes"] == (65536 - 4096) // 2 // 64 * 64,
          f"the header written into the region matches the layout {lay}")
    check(ch["shm"] == {"id": rid, "offset": 0} and ch["bytes"] == 65536 and ch["spin_us"] == 200 and
          ch["ttl_s"] == 600 and ch["requests"] == 0, "the channel's fields")
    st, lst, _ = call("GET", "/v1/channels")
    check(st == 200 and [c["id"] for c in lst["channels"]] == [ch["id"]] and lst["count"] == 1, "GET /v1/channels")
    st, one, _ = call("GET", "/v1/channels/" + ch["id"])
    check(st == 200 and one["id"] == ch["id"], "GET /v1/channels/{id}")
    d = Doorbell(mm, ch)
    rng = random.Random(7)
    for t in ("f32", "f64", "i32", "u32", "i64", "u64", "f16", "bf16"):
        data = values(t, 300, rng)
        for route, path_, body in ((1, "/v1/reduce", {"type": t, "op": "sum", "data": data}),
                                   (1, "/v1/reduce", {"type": t, "op": "max", "data": data}),
                                   (2, "/v1/scan", {"type": t, "op": "sum", "data": data[:50]}),
                                   (2, "/v1/scan", {"type": t, "op": "min", "exclusive": True, "data": data[:50]})):
            cst, cans = d.ask(route, body)
            hst, hans, _ = call("POST", path_, body)
            check(cst == hst == 200 and same_answer(cans, hans), f"{t} {path_} {body['op']}: channel = HTTP "
                  f"({cst} {str(cans)[:120]} / {hst} {str(hans)[:120]})")
    rid2, _, mm2 = region("data", 4096)
    struct.pack_into("<1024f", mm2, 0, *[float(i % 17) for i in range(1024)])
    body = {"type": "f32", "op": "sum", "shm": {"id": rid2, "offset": 8, "count": 1000}}
    cst, cans = d.ask(1, body)
    hst, hans, _ = call("POST", "/v1/reduce", body)
    check(cst == hst == 200 and same_answer(cans, hans), f"a region as the input: channel = HTTP ({cans})")
    b = {"type": "f32", "op": "sum", "data": [1, 2, 3.5], "stats": True}
    cst, cans = d.ask(1, b)
    hst, hans, _ = call("POST", "/v1/reduce", b)
    refused(cst, cans, 400, hans["error"]["code"], hans["error"]["field"], "an unknown field: HTTP's refusal")
    cst, cans = d.ask(3, {"op": "sum"})
    refused(cst, cans, 400, "bad_route", "req_route", "req_route 3")
    cst, cans = d.ask(1, b'{"op": "sum", "data": [1,', None)
    refused(cst, cans, 400, "bad_json", "body", "a body that is not JSON")
    cst, cans = d.ask(1, {"op": "sum", "data": [1]}, length=d.rmax + 1)
    refused(cst, cans, 413, "body_too_large", "req_len", "req_len past the request area")
    big = {"type": "i32", "op": "sum", "generate": {"kind": "iota", "n": 8192}}
    cst, cans = d.ask(2, big)
    refused(cst, cans, 413, "answer_too_large", "", "a scan whose answer passes the answer area")
    cst, cans = d.ask(1, {"type": "i32", "op": "sum", "data": [5, 6]})
    check(cst == 200 and cans["value"] == 11, "the channel serves on after its refusals")
    # a sleeping channel: spin_us 0, the doorbell says it sleeps; a request wakes it at once
    rid3, _, mm3 = region("sleepy")
    st, ch3, _ = open_channel(rid3, spin_us=0, ttl_s=30)
    time.sleep(0.05)
    d3 = Doorbell(mm3, ch3)
    asleep = u32(mm3, 132) == 1 and call("GET", "/v1/channels/" + ch3["id"])[1]["sleeping"] is True
    t0 = time.monotonic()
    cst, cans = d3.ask(1, {"type": "i32", "op": "sum", "data": [1, 2]}, timeout=5)
    check(asleep and cst == 200 and cans["value"] == 3 and time.monotonic() - t0 < 0.15,
          f"a sleeping channel (spin_us 0) is woken by FUTEX_WAKE (asleep {asleep}, {time.monotonic() - t0:.3f} s)")
    served = call("GET", "/v1/channels/" + ch["id"])[1]["requests"]
    check(served == 8 * 4 + 7, f"requests counts what the channel served ({served})")
    with urllib.request.urlopen(URL + "/metrics", timeout=10) as f:
        m = dict(l.rsplit(" ", 1) for l in f.read().decode().splitlines() if l.startswith("warpd_channel"))
    check(m.get("warpd_channels") == "2" and m.get("warpd_channels_opened_total") == "2" and
          int(m.get("warpd_channel_requests_total", 0)) == served + 1, f"/metrics: the channels' series ({m})")
    post_refusals(rid)
    # DELETE; the region deleted under a channel; ttl_s; truncation
    st, gone, _ = call("DELETE", "/v1/channels/" + ch3["id"])
    check(st == 200 and gone["deleted"] is True and call("GET", "/v1/channels/" + ch3["id"])[0] == 404,
          "DELETE /v1/channels/{id}: 200 deleted, then 404")
    refused(*call("DELETE", "/v1/channels/" + ch3["id"])[:2], 404, "unknown_channel", "id", "DELETE again")
    st, _, _ = call("DELETE", "/v1/shm/" + rid2)
    rid4, _, mm4 = region("deleted")
    st, ch4, _ = open_channel(rid4, spin_us=0)
    mapped = call("GET", "/v1/shm")[1]["bytes_mapped"]
    call("DELETE", "/v1/shm/" + rid4)
    check(wait_gone(ch4["id"]), "a channel whose region is deleted closes within a tick")
    t0, now = time.monotonic(), mapped
    while time.monotonic() - t0 < 1 and now != mapped - 65536:
        now = call("GET", "/v1/shm")[1]["bytes_mapped"]
        time.sleep(0.02)
    check(now == mapped - 65536, f"its mapping goes with it, no other request needed (bytes_mapped {mapped} -> {now})")
    overlap_checks()
    rid5, _, mm5 = region("ttl")
    st, ch5, _ = open_channel(rid5, spin_us=0, ttl_s=1)
    check(st == 201 and wait_gone(ch5["id"], 3.0), "a channel idle for ttl_s (1) closes")
    trunc(d)


def overlap_checks():  # two channels never share bytes; one beside another is fine
    rid, _, mm = region("overlap")
    a = call("POST", "/v1/channels", {"shm": {"id": rid}, "bytes": 16384, "spin_us": 0})
    d = Doorbell(mm, a[1])
    before = (u32(mm, 64), u32(mm, 192))
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid, "offset": 8192}, "bytes": 16384})[:2], 409,
            "channel_overlap", "shm.offset", "a channel over another's bytes")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid}})[:2], 409, "channel_overlap", "shm.offset",
            "a channel at the same offset")
    check((u32(mm, 64), u32(mm, 192)) == before and bytes(mm[0:8]) == b"WARPDCH1",
          "the refused opens wrote nothing into the open channel's words")
    b = call("POST", "/v1/channels", {"shm": {"id": rid, "offset": 16384}, "bytes": 16384, "spin_us": 0})
    cst, cans = d.ask(1, {"type": "i32", "op": "sum", "data": [4, 5]})
    check(a[0] == 201 and b[0] == 201 and cst == 200 and cans["value"] == 9, "a channel right after another: both serve")
    for x in (a, b):
        call("DELETE", "/v1/channels/" + x[1]["id"])


def wait_gone(cid, limit=1.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if call("GET", "/v1/channels/" + cid)[0] == 404:
            return True
        time.sleep(0.02)
    return False


def trunc(d):
    rid, path, mm = region("trunc")
    st, ch, _ = open_channel(rid, spin_us=0)
    before = call("GET", "/v1/channels")[1]["truncated"]
    os.truncate(path, 0)  # the daemon's next touch of the doorbell faults
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2 and call("GET", "/v1/channels/" + ch["id"])[0] != 404:
        time.sleep(0.02)
    after = call("GET", "/v1/channels")[1]["truncated"]
    check(call("GET", "/v1/channels/" + ch["id"])[0] == 404 and after == before + 1,
          f"an object truncated under a live channel closes it (truncated {before} -> {after})")
    cst, cans = d.ask(1, {"type": "i32", "op": "sum", "data": [2, 2]})
    check(cst == 200 and cans["value"] == 4 and call("GET", "/v1/health")[0] == 200,
          "the daemon and its other channels serve on")


def post_refusals(rid):
    refused(*call("POST", "/v1/channels", {})[:2], 400, "missing_field", "shm", "no shm")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid}, "spin": 1})[:2], 400, "unknown_field", "spin",
            "an unknown field")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid, "count": 4}})[:2], 400, "unknown_field", "shm.count",
            "shm.count")
    refused(*open_channel(rid, spin_us=100001)[:2], 400, "out_of_range", "spin_us", "spin_us past 100000")
    refused(*open_channel(rid, ttl_s=0)[:2], 400, "out_of_range", "ttl_s", "ttl_s 0")
    refused(*open_channel(rid, spin_us="1")[:2], 400, "wrong_type", "spin_us", "spin_us a string")
    refused(*open_channel(rid, bytes=1024)[:2], 400, "out_of_range", "bytes", "bytes under 16384")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid, "offset": 65536 - 8192}})[:2], 400, "out_of_range",
            "bytes", "8192 bytes left after the offset")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid, "offset": 70000}})[:2], 400, "out_of_range",
            "shm.offset", "an offset past the region")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid, "offset": 4}})[:2], 400, "out_of_range",
            "shm.offset", "an offset not 64-byte aligned")
    refused(*open_channel(rid, bytes=1 << 20)[:2], 400, "out_of_range", "bytes", "bytes past the region")
    refused(*open_channel("shm-0000000000000000")[:2], 404, "unknown_shm", "shm.id", "an unknown region")
    refused(*call("POST", "/v1/channels", {"shm": {"id": 5}})[:2], 400, "wrong_type", "shm.id", "shm.id a number")
    refused(*call("GET", "/v1/channels/ch-0000000000000000")[:2], 404, "unknown_channel", "id", "GET unknown")


def readonly_checks():  # a daemon that may only read the object (channels.sh runs it as another user)
    name, path, mm = make_obj("ro", 1 << 16, 0o444)
    st, r, _ = call("POST", "/v1/shm", {"name": name})
    check(st == 201 and r.get("read_only") is True, f"a 0444 object registers read_only ({st} {r})")
    refused(*open_channel(r.get("id", ""))[:2], 403, "read_only", "shm.id", "a channel in a read-only region")


def limit_checks():
    ids = [region(f"lim{i}")[0] for i in range(3)]
    a = open_channel(ids[0], spin_us=0)
    b = open_channel(ids[1], spin_us=0)
    c = open_channel(ids[2], spin_us=0)
    check(a[0] == b[0] == 201, "two channels open under --channels-max 2")
    refused(*c[:2], 429, "too_many_channels", "", "the third")
    call("DELETE", "/v1/channels/" + a[1]["id"])
    check(open_channel(ids[2], spin_us=0)[0] == 201, "after one closes, another opens")


def off_checks(code):
    rid = None
    if code == "channels_disabled":
        rid = region("off")[0]
    for method, path, body in (("POST", "/v1/channels", {"shm": {"id": rid or "shm-0000000000000000"}}),
                               ("GET", "/v1/channels", None), ("GET", "/v1/channels/ch-0000000000000000", None),
                               ("DELETE", "/v1/channels/ch-0000000000000000", None)):
        refused(*call(method, path, body)[:2], 403, code, "", f"{method} {path}")


def token_checks():
    rid, _, mm = region("tok")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid}}, token=None)[:2], 401, "unauthorized", "Authorization",
            "without the token")
    st, ch, _ = open_channel(rid, spin_us=0)
    cst, cans = Doorbell(mm, ch).ask(1, {"type": "i32", "op": "sum", "data": [1, 2, 3]})
    check(st == 201 and cst == 200 and cans["value"] == 6, "with the token: opened, and its requests served")


def hammer():  # (the mock driver's cuda) reduce a buffer through a channel until the daemon goes away
    rid, _, mm = region("hammer")
    st, b, _ = call("PUT", "/v1/buffers", {"type": "u32", "generate": {"kind": "iota", "n": 1 << 16}})
    st2, ch, _ = open_channel(rid, spin_us=1000)
    d = Doorbell(mm, ch)
    warm = d.ask(1, {"buffer": b["id"], "op": "max"}, timeout=60.0)[0]  # the first compiles the kernel
    check(st == 201 and st2 == 201 and warm == 200, f"hammer: a buffer and a channel, a first reduce ({warm})")
    n = 0
    while d.ask(1, {"buffer": b["id"], "op": "max"}, timeout=2.0)[0] == 200:
        n += 1
        if n == 1:  # mockcuda.sh sends SIGTERM once it reads this: one reduce in, the next in flight
            print("hammering", flush=True)
    check(n > 0, f"hammer: {n} reduces through the channel before the daemon stopped")


def leave_checks():
    for i, spin in enumerate((0, 100000)):
        rid, _, mm = region(f"leave{i}")
        st, ch, _ = open_channel(rid, spin_us=spin)
        cst, cans = Doorbell(mm, ch).ask(1, {"type": "i32", "op": "sum", "data": [i]})
        check(st == 201 and cst == 200, f"a channel left open (spin_us {spin})")


try:
    {"main": main_checks, "limit": limit_checks, "off": lambda: off_checks("channels_disabled"),
     "shmoff": lambda: off_checks("shm_disabled"), "token": token_checks, "leave": leave_checks,
     "readonly": readonly_checks, "hammer": hammer}[MODE]()
except Exception as e:  # noqa: BLE001 — a crash is a failure, with its reason
    import traceback
    traceback.print_exc()
    check(False, f"{MODE}: {type(e).__name__}: {e}")
finally:
    for p in made:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
print(f"channels: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
