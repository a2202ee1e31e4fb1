#!/usr/bin/env python3
"""users.py — many users on one daemon (server/http/users.c, access.c, the owners in engine/) against a
live daemon started by tests/api/users.sh with the tokens file it wrote:
    reader read, runner run (buffer_bytes=64k shm_bytes=64k channels=1), rival run (jobs=1),
    admin admin, limited read (rate=2).
Modes:
  main URL OBJ   every route under each role (403 "forbidden" naming the role), each resource kind
                 (buffer, region, job, channel) owned: another user's id answers 404 with the body of an
                 id never made, as input too; listings show one's own, an admin all with "owner"; the
                 quotas (413/429 with the quota's name in code, Retry-After for rate); whoami; /metrics
                 by user; the job queue taken in turn by user (read back from each job's "dispatch").
  reload URL OBJ after tests/api/users.sh rewrote the file and sent SIGHUP: rival's token fails, newbie's
                 works, rival's buffer is still there for the admin.
  kept URL OBJ   after a file that does not parse and SIGHUP: the table before it still answers.
Prints "users.py: N passed, N failed" last.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

MODE, URL, OBJ = sys.argv[1], sys.argv[2], sys.argv[3]
TOK = {u: f"{u}-token-0123456789abcdef" for u in ("reader", "runner", "rival", "admin", "limited", "newbie")}
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


def call(method, path, body=None, user=None):
    data = json.dumps(body).encode() if body is not None else None
    h = {"Content-Type": "application/json"} if data is not None else {}
    if user:
        h["Authorization"] = "Bearer " + TOK[user]
    r = urllib.request.Request(URL + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(r, timeout=60) as f:
            raw = f.read()
            try:
                return f.status, json.loads(raw), dict(f.headers)
            except ValueError:
                return f.status, raw.decode(errors="replace"), dict(f.headers)
    except urllib.error.HTTPError as e:
        raw = e.read() or b"{}"
        try:
            return e.code, json.loads(raw), dict(e.headers)
        except ValueError:
            return e.code, {}, dict(e.headers)


def code(body):
    return body.get("error", {}).get("code") if isinstance(body, dict) else None


def refused(st, body, status, want, what, field=None):
    e = body.get("error", {}) if isinstance(body, dict) else {}
    ok = st == status and e.get("code") == want and (field is None or e.get("field") == field)
    check(ok, f"{what}: {status} {want} ({st} {e})")
    return e


def same_as_unknown(st, body, st2, body2, real_id, fake_id, what):
    """Another user's id answers exactly as an id never made (the id itself aside)."""
    e, e2 = dict(body.get("error", {})), dict(body2.get("error", {}))
    e.pop("request_id", None), e2.pop("request_id", None)
    e["message"] = e.get("message", "").replace(real_id, fake_id)
    check(st == 404 and st2 == 404 and e == e2, f"{what}: 404 as an unknown id ({st} {e} / {st2} {e2})")


def make_obj(tag, size):
    name = f"/{OBJ}-{tag}"
    path = "/dev/shm" + name
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
    os.ftruncate(fd, size)
    os.close(fd)
    made.append(path)
    return name


def reads_and_roles():
    for path in ("/v1/health", "/v1/ready"):
        check(call("GET", path)[0] in (200, 503), f"GET {path} without a token")
    for path in ("/v1/info", "/v1/families", "/v1/openapi.json", "/metrics", "/v1/whoami", "/v1/cache",
                 "/v1/buffers", "/v1/jobs", "/v1/shm", "/v1/channels"):
        refused(*call("GET", path)[:2], 401, "unauthorized", f"GET {path} without a token")
        for u in ("reader", "runner", "admin"):
            st = call("GET", path, user=u)[0]
            check(st == 200, f"GET {path} as {u}: 200 ({st})")
    bad = urllib.request.Request(URL + "/v1/info", headers={"Authorization": "Bearer not-a-known-token-000000"})
    try:
        urllib.request.urlopen(bad, timeout=30)
        check(False, "an unknown token: 401")
    except urllib.error.HTTPError as e:
        check(e.code == 401 and e.headers.get("WWW-Authenticate"), "an unknown token: 401 with a challenge")
    for u, role in (("reader", "read"), ("runner", "run"), ("admin", "admin"), ("limited", "read")):
        st, who, _ = call("GET", "/v1/whoami", user=u)
        check(st == 200 and who.get("name") == u and who.get("role") == role, f"whoami {u}: {who}")
    st, who, _ = call("GET", "/v1/whoami", user="runner")
    q = who.get("quotas", {})
    check(q.get("buffer_bytes") == 65536 and q.get("channels") == 1 and q.get("jobs") is None,
          f"whoami runner's quotas: {q}")
    # the reader may change nothing: every job route is the run role's
    changes = [("POST", "/v1/warp", {"family": "warp_allreduce", "type": "i32", "op": "sum", "input": {"iota": 32}}),
               ("POST", "/v1/compile", {"family": "warp_allreduce", "type": "i32", "op": "sum"}),
               ("POST", "/v1/reduce", {"data": [1, 2]}), ("POST", "/v1/scan", {"data": [1, 2]}),
               ("PUT", "/v1/buffers", {"type": "f32", "data": [1]}),
               ("DELETE", "/v1/buffers/b-0000000000000000", None),
               ("POST", "/v1/jobs", {"kind": "reduce", "request": {"data": [1]}}),
               ("DELETE", "/v1/jobs/j-0000000000000000", None), ("POST", "/v1/shm", {"name": "/warpd-x"}),
               ("DELETE", "/v1/shm/shm-0000000000000000", None),
               ("POST", "/v1/channels", {"shm": {"id": "shm-0"}}),
               ("DELETE", "/v1/channels/ch-0000000000000000", None)]
    for method, path, body in changes:
        e = refused(*call(method, path, body, user="reader")[:2], 403, "forbidden", f"{method} {path} as reader")
        check("run role" in e.get("message", ""), f"{method} {path}: the message names the run role")
    for u in ("reader", "runner"):
        for path in ("/v1/cache", "/v1/cache/0000"):
            e = refused(*call("DELETE", path, user=u)[:2], 403, "forbidden", f"DELETE {path} as {u}")
            check("admin role" in e.get("message", ""), "the message names the admin role")
    prewarm = {"specs": [{"family": "warp_allreduce", "type": "i32", "op": "sum"}]}
    refused(*call("POST", "/v1/compile", prewarm, user="runner")[:2], 403, "forbidden", "prewarm as runner", "specs")
    check(call("POST", "/v1/compile", prewarm, user="admin")[0] == 200, "prewarm as admin: 200")
    for method, path, body in changes[:4]:
        st = call(method, path, body, user="runner")[0]
        check(st == 200, f"{method} {path} as runner: 200 ({st})")
    check(call("DELETE", "/v1/cache", user="admin")[0] == 200, "DELETE /v1/cache as admin: 200")


def buffers():
    st, b, _ = call("PUT", "/v1/buffers", {"type": "f32", "data": [1, 2, 3]}, user="runner")
    check(st == 201 and b.get("owner") == "runner", f"PUT /v1/buffers as runner: 201 owner runner ({st} {b})")
    st, rb, _ = call("PUT", "/v1/buffers", {"type": "f32", "data": [5]}, user="rival")
    check(st == 201 and rb.get("owner") == "rival", "PUT /v1/buffers as rival: 201")
    bid, fake = b["id"], "b-00000000deadbeef"
    for method in ("GET", "DELETE"):
        same_as_unknown(*call(method, "/v1/buffers/" + bid, user="rival")[:2],
                        *call(method, "/v1/buffers/" + fake, user="rival")[:2], bid, fake, f"{method} another's buffer")
    same_as_unknown(*call("GET", "/v1/buffers/" + bid + "?data=json", user="rival")[:2],
                    *call("GET", "/v1/buffers/" + fake + "?data=json", user="rival")[:2], bid, fake,
                    "GET another's buffer's data")
    same_as_unknown(*call("POST", "/v1/reduce", {"buffer": bid}, user="rival")[:2],
                    *call("POST", "/v1/reduce", {"buffer": fake}, user="rival")[:2], bid, fake,
                    "another's buffer as a reduce's input")
    same_as_unknown(*call("POST", "/v1/scan", {"buffer": bid}, user="rival")[:2],
                    *call("POST", "/v1/scan", {"buffer": fake}, user="rival")[:2], bid, fake,
                    "another's buffer as a scan's input")
    same_as_unknown(*call("GET", "/v1/buffers/" + bid, user="reader")[:2],
                    *call("GET", "/v1/buffers/" + fake, user="reader")[:2], bid, fake, "the reader and the buffer")
    check(call("POST", "/v1/reduce", {"buffer": bid}, user="runner")[0] == 200, "runner reduces their own buffer")
    mine = [x["id"] for x in call("GET", "/v1/buffers", user="runner")[1]["buffers"]]
    theirs = [x["id"] for x in call("GET", "/v1/buffers", user="rival")[1]["buffers"]]
    check(mine == [bid] and theirs == [rb["id"]], f"each lists their own ({mine} / {theirs})")
    check(call("GET", "/v1/buffers", user="reader")[1]["buffers"] == [], "the reader lists none")
    # a listing's totals are the user's own (others' use is not theirs to see); an admin's the daemon's
    lr, lv, la = (call("GET", "/v1/buffers", user=u)[1] for u in ("runner", "rival", "admin"))
    check(lr["bytes"] == 12 and lv["bytes"] == 4 and la["bytes"] >= 16,
          f"listed bytes: runner 12, rival 4, the admin all ({lr['bytes']}, {lv['bytes']}, {la['bytes']})")
    check(lr["quota"] == 65536 and lv["quota"] == la["quota"] > 65536,
          f"listed quota: runner's own 64 KiB, rival the daemon's ({lr['quota']}, {lv['quota']}, {la['quota']})")
    every = {x["id"]: x["owner"] for x in call("GET", "/v1/buffers", user="admin")[1]["buffers"]}
    check(every.get(bid) == "runner" and every.get(rb["id"]) == "rival", f"the admin lists all, with owners {every}")
    check(call("GET", "/v1/buffers/" + rb["id"], user="admin")[0] == 200, "the admin reads another's buffer")
    # the quota: 64 KiB of buffers for runner; the global one is far larger
    refused(*call("PUT", "/v1/buffers", {"type": "f32", "generate": {"kind": "iota", "n": 20000}}, user="runner")[:2],
            413, "quota_buffer_bytes", "runner past buffer_bytes", "buffer_bytes")
    check(call("PUT", "/v1/buffers", {"type": "f32", "generate": {"kind": "iota", "n": 20000}}, user="rival")[0] == 201,
          "rival has no buffer quota: the same buffer fits")
    check(call("DELETE", "/v1/buffers/" + bid, user="runner")[0] == 200, "runner deletes their own buffer")
    return rb["id"]


def regions_and_channels():
    name = make_obj("r", 1 << 15)
    st, r, _ = call("POST", "/v1/shm", {"name": name}, user="runner")
    check(st == 201 and r.get("owner") == "runner", f"POST /v1/shm as runner: 201 ({st} {r})")
    rid, fake = r["id"], "shm-00000000deadbeef"
    for method in ("GET", "DELETE"):
        same_as_unknown(*call(method, "/v1/shm/" + rid, user="rival")[:2],
                        *call(method, "/v1/shm/" + fake, user="rival")[:2], rid, fake, f"{method} another's region")
    same_as_unknown(*call("POST", "/v1/reduce", {"shm": {"id": rid}, "type": "f32", "count": 4}, user="rival")[:2],
                    *call("POST", "/v1/reduce", {"shm": {"id": fake}, "type": "f32", "count": 4}, user="rival")[:2],
                    rid, fake, "another's region as a reduce's input")
    same_as_unknown(*call("POST", "/v1/channels", {"shm": {"id": rid}}, user="rival")[:2],
                    *call("POST", "/v1/channels", {"shm": {"id": fake}}, user="rival")[:2], rid, fake,
                    "a channel in another's region")
    check([x["id"] for x in call("GET", "/v1/shm", user="rival")[1]["regions"]] == [], "rival lists no region")
    check([x["owner"] for x in call("GET", "/v1/shm", user="admin")[1]["regions"]] == ["runner"], "the admin lists it")
    big = make_obj("big", 1 << 17)
    refused(*call("POST", "/v1/shm", {"name": big}, user="runner")[:2], 413, "quota_shm_bytes",
            "runner past shm_bytes", "shm_bytes")
    st, ch, _ = call("POST", "/v1/channels", {"shm": {"id": rid}, "bytes": 16384, "spin_us": 0}, user="runner")
    check(st == 201 and ch.get("owner") == "runner", f"POST /v1/channels as runner: 201 ({st} {ch})")
    refused(*call("POST", "/v1/channels", {"shm": {"id": rid, "offset": 16384}, "bytes": 16384}, user="runner")[:2],
            429, "quota_channels", "runner's second channel", "channels")
    cid, cfake = ch["id"], "ch-00000000deadbeef"
    for method in ("GET", "DELETE"):
        same_as_unknown(*call(method, "/v1/channels/" + cid, user="rival")[:2],
                        *call(method, "/v1/channels/" + cfake, user="rival")[:2], cid, cfake,
                        f"{method} another's channel")
    check(call("GET", "/v1/channels", user="rival")[1]["channels"] == [], "rival lists no channel")
    check([x["owner"] for x in call("GET", "/v1/channels", user="admin")[1]["channels"]] == ["runner"],
          "the admin lists the channel with its owner")
    check(call("DELETE", "/v1/channels/" + cid, user="admin")[0] == 200, "the admin closes another's channel")
    check(call("DELETE", "/v1/shm/" + rid, user="runner")[0] == 200, "runner deletes their own region")


def jobs():
    st, j, _ = call("POST", "/v1/jobs", {"kind": "reduce", "request": {"data": [1, 2]}}, user="runner")
    check(st == 202 and j.get("owner") == "runner", f"POST /v1/jobs as runner: 202 ({st} {j})")
    jid, fake = j["id"], "j-00000000deadbeef"
    for method in ("GET", "DELETE"):
        same_as_unknown(*call(method, "/v1/jobs/" + jid, user="rival")[:2],
                        *call(method, "/v1/jobs/" + fake, user="rival")[:2], jid, fake, f"{method} another's job")
    check(all(x["owner"] == "rival" for x in call("GET", "/v1/jobs", user="rival")[1]["jobs"]), "rival lists theirs")
    check(jid in [x["id"] for x in call("GET", "/v1/jobs", user="admin")[1]["jobs"]], "the admin lists every job")
    # a job runs as its owner: its buffer input is theirs only
    st, b, _ = call("PUT", "/v1/buffers", {"type": "f32", "data": [4, 4]}, user="runner")
    st, j2, _ = call("POST", "/v1/jobs", {"kind": "reduce", "request": {"buffer": b["id"]}}, user="rival")
    v = wait_job(j2["id"], "rival")
    check(v.get("state") == "failed" and v.get("error", {}).get("code") == "unknown_buffer",
          f"rival's job over runner's buffer fails unknown_buffer ({v.get('state')} {v.get('error')})")
    call("DELETE", "/v1/buffers/" + b["id"], user="runner")


def wait_job(jid, user):
    for _ in range(600):
        st, v, _ = call("GET", "/v1/jobs/" + jid, user=user)
        if v.get("state") in ("done", "failed", "cancelled"):
            return v
        time.sleep(0.05)
    return v


def slow_request(n):  # an emulator reduce long enough that the others queue behind it
    return {"kind": "reduce", "request": {"type": "f64", "op": "sum", "generate": {"kind": "random", "n": n}}}


def jobs_quota_and_turns():
    """With --job-workers 1: one slow job of runner runs; while it runs, runner queues 3 more, then
    rival 1 (rival's quota) ... The worker then takes them in turn by user, read back from each job's
    "dispatch". The order is proved only when the slow job was still running when the last one was
    queued (the daemon's own times say so); else it is tried again with a larger one."""
    n = 1 << 22
    for attempt in range(4):
        st, slow, _ = call("POST", "/v1/jobs", slow_request(n), user="runner")
        small = {"kind": "reduce", "request": {"data": [1, 2, 3]}}
        a = [call("POST", "/v1/jobs", small, user="runner")[1]["id"] for _ in range(3)]
        st, b1, _ = call("POST", "/v1/jobs", small, user="rival")
        st2, b2, h2 = call("POST", "/v1/jobs", small, user="rival")
        sv = call("GET", "/v1/jobs/" + slow["id"], user="runner")[1]
        views = {i: wait_job(i, "admin") for i in [slow["id"]] + a + [b1["id"]]}
        if sv.get("state") != "running":
            n <<= 2
            continue
        refused(st2, b2, 429, "quota_jobs", "rival's second job while one is queued", "jobs")
        order = sorted(views, key=lambda i: views[i].get("dispatch", 0))
        who = ["A" if i != b1["id"] else "B" for i in order]
        check(who == ["A", "B", "A", "A", "A"], f"the queue takes them in turn by user: {''.join(who)} "
              f"(first come first served would be AAAAB)")
        disp = [views[i].get("dispatch", 0) for i in order]
        check(disp == sorted(disp) and len(set(disp)) == 5, f"each job records its turn: {disp}")
        return
    check(False, "the slow job finished before the others were queued, four times")


def rate():
    got = [call("GET", "/v1/whoami", user="limited") for _ in range(6)]
    sts = [g[0] for g in got]
    check(sts[:2] == [200, 200] and 429 in sts, f"rate=2: a burst of 2, then 429 ({sts})")
    r = next((g for g in got if g[0] == 429), None)
    if r:
        refused(r[0], r[1], 429, "quota_rate", "past the rate", "rate")
        check(r[2].get("Retry-After", "").isdigit(), f"Retry-After {r[2].get('Retry-After')}")
    check(call("GET", "/v1/whoami", user="reader")[0] == 200, "another user is not limited by it")


def metrics():
    st, text, _ = call("GET", "/metrics", user="admin")
    lines = dict(l.rsplit(" ", 1) for l in text.splitlines() if l.startswith("warpd_user_"))
    check(float(lines.get('warpd_user_requests_total{user="runner"}', 0)) > 10, "requests counted by user")
    check(float(lines.get('warpd_user_refused_total{user="reader"}', 0)) >= 12, "refusals counted by user")
    check(float(lines.get('warpd_user_refused_total{user="limited"}', 0)) >= 1, "the rate's refusals too")


def main():
    reads_and_roles()
    buffers()
    regions_and_channels()
    jobs()
    jobs_quota_and_turns()
    rate()
    metrics()


def reload():
    refused(*call("GET", "/v1/whoami", user="rival")[:2], 401, "unauthorized", "a removed user's token")
    st, who, _ = call("GET", "/v1/whoami", user="newbie")
    check(st == 200 and who.get("name") == "newbie", "an added user's token works at once")
    owners = [x["owner"] for x in call("GET", "/v1/buffers", user="admin")[1]["buffers"]]
    check("rival" in owners, f"a removed user's buffers stay until their ttl or an admin ({owners})")
    check(call("GET", "/v1/whoami", user="runner")[0] == 200, "the others go on")


def kept():
    check(call("GET", "/v1/whoami", user="newbie")[0] == 200, "a file that does not parse leaves the table")
    check(call("GET", "/v1/whoami", user="rival")[0] == 401, "... as it was")


try:
    {"main": main, "reload": reload, "kept": kept}[MODE]()
finally:
    for p in made:
        try:
            os.unlink(p)
        except OSError:
            pass
print(f"users.py: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
