"""cli.py — warpctl, the command line (pip install ./clients/python; or python3 -m warpd): argument parsing,
one Client call per command, the answers printed as JSON or tables, upload and job progress bars."""
import argparse
import base64
import json
import os
import sys

from .arrays import ELEM_SIZE, pack
from .client import DEFAULT_URL, Client
from .errors import WarpdError
from .progress import _bars_open, progress_bar

PROGRESS_MIN_BYTES = 1 << 20  # uploads at least this large show a progress bar (CLI)


def _value(text):
    """A CLI value: JSON when it parses (numbers, lists, objects), a comma list of numbers, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if "," in text:
        return [_value(x) for x in text.split(",") if x.strip()]
    return text


def _kv(items):
    out = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep:
            raise SystemExit(f"warpctl: --args wants name=value, got {item!r}")
        out[k.strip()] = _value(v.strip())
    return out


def _print_json(obj):
    print(json.dumps(obj, indent=2))


def _print_warp(r):
    n = r.get("lanes", len(r.get("output", [])))
    print(f"{r.get('family')} {r.get('type')} width {r.get('width')} mask {r.get('mask', '-')} · {n} lanes · "
          f"backend {r.get('backend')} · cache {r.get('cache')}")
    if r.get("key"):
        print(f"key {r['key']}")
    src = r.get("source_lane")
    pred = r.get("pred")
    print(f"{'lane':>5} {'output':>22} " + ("  src" if src else "") + ("  pred" if pred else ""))
    for t in range(n):
        out = r["output"][t]
        text = json.dumps(out) if r["defined"][t] else f"undefined ({r['undefined_reason'][t]})"
        line = f"{t:5d} {text:>22} "
        if src:
            line += f" {'' if src[t] is None else src[t]:>4}"
        if pred:
            line += f"  {pred[t]}"
        print(line.rstrip())
    t = r.get("timing") or {}
    if t:  # a step the server did not time (cuda without "profile") is null: printed as "-"
        print("timing " + " ".join(f"{k}={'-' if v is None else format(v, 'g')}" for k, v in t.items()))


def _data_args(p):
    p.add_argument("file", nargs="?", help="raw little-endian elements ('-' for stdin), sent as octet-stream")
    p.add_argument("--type", default="f32", choices=sorted(ELEM_SIZE))
    p.add_argument("--op", default="sum", help="sum prod min max and or xor, or an expression in a and b; reduce "
                   "also mean var std norm1 norm2 norminf count_nonzero")
    p.add_argument("--ddof", type=int, choices=[0, 1], help="var, std: the divisor is count - ddof (default 0)")
    p.add_argument("--data", help="inline values: 1,2,3 or a JSON list")
    p.add_argument("--b64", action="store_true", help="send FILE as data_b64 inside JSON instead of a raw body")
    p.add_argument("--buffer", help="the id of a buffer uploaded with 'buffers put'")
    p.add_argument("--generate", metavar="KIND:N[:SEED]", help="made on the device: iota:N, random:N:SEED, constant:N")
    p.add_argument("--strategy", help="gmem smem shfl_xor shfl_down redux atomic (default: the fastest)")
    p.add_argument("--check", action="store_true", help="also compute a float64 CPU reference")
    p.add_argument("--map", help="applied to each element first, over x (and y: --data2, --buffer2): x*x, abs(x)")
    p.add_argument("--data2", help="the second input of a map over y (or --op dot): inline values, FILE's length")
    p.add_argument("--buffer2", help="the second input as a buffer id")
    p.add_argument("--async", dest="async_", action="store_true", help="run as an async job, with a progress bar")
    p.add_argument("--progress", action="store_true", help="always show the upload progress bar")
    p.add_argument("--json", action="store_true", help="print the whole JSON answer")


def _generate(text):
    parts = text.split(":")
    g = {"kind": parts[0], "n": int(parts[1]) if len(parts) > 1 else 0}
    if len(parts) > 2:
        g["seed"] = int(parts[2])
    return g


def _run_data(c, kind, a):
    extra = {"strategy": a.strategy, "check": True if a.check else None, "map": a.map}
    if a.ddof is not None:
        extra["ddof"] = a.ddof
    if a.data2 is not None:
        extra["data2"] = _list(a.data2)
    if a.buffer2 is not None:
        extra["buffer2"] = a.buffer2
    if (a.data2 is not None or a.buffer2 is not None) and a.file:
        a.b64 = True  # a raw body has no room for a second input: FILE goes as data_b64
    if kind == "scan":
        if a.exclusive:
            extra["exclusive"] = True
    sources = [x for x in (a.file, a.data, a.buffer, a.generate) if x is not None]
    if len(sources) != 1:
        raise SystemExit(f"warpctl {kind}: give exactly one of FILE, --data, --buffer, --generate")
    fn = c.reduce if kind == "reduce" else c.scan
    if a.async_:
        body = {"type": a.type, "op": a.op, **{k: v for k, v in extra.items() if v is not None}}
        if a.file:
            body["data_b64"] = base64.b64encode(_read_file(a.file)).decode()
        elif a.data:
            body["data"] = _list(a.data)
        elif a.buffer:
            body["buffer"] = a.buffer
        else:
            body["generate"] = _generate(a.generate)
        job = c.job_submit(kind, body)
        print(f"job {job.get('id')} {job.get('state', '')}", file=sys.stderr)
        return c.job_wait(job["id"], progress=progress_bar("job"))
    if a.file:
        if a.b64:
            return fn(data_b64=_read_file(a.file), type=a.type, op=a.op, **extra)
        if a.file == "-":
            return fn(raw=sys.stdin.buffer.read(), type=a.type, op=a.op, **extra)
        size = os.path.getsize(a.file)
        with open(a.file, "rb") as f:
            prog = progress_bar("upload") if (a.progress or size >= PROGRESS_MIN_BYTES) else None
            return fn(raw=f, type=a.type, op=a.op, progress=prog, **extra)
    if a.data:
        return fn(_list(a.data), type=a.type, op=a.op, **extra)
    if a.buffer:
        return fn(buffer=a.buffer, type=a.type, op=a.op, **extra)
    return fn(generate=_generate(a.generate), type=a.type, op=a.op, **extra)


def _list(text):
    v = _value(text)
    return v if isinstance(v, list) else [v]


def _read_file(path):
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="warpctl", description="Client for the warpd daemon ($WARPD, default "
                                 + DEFAULT_URL + "; $WARPD_TOKEN: its token, when it has one).")
    ap.add_argument("--url", default=None, help="daemon base URL (default $WARPD or " + DEFAULT_URL + ")")
    ap.add_argument("--timeout", type=float, default=600.0)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, hlp in (("health", "liveness and readiness"), ("info", "version, backend, device, cache"),
                      ("families", "every kernel family"), ("metrics", "Prometheus text"),
                      ("whoami", "the token's user: name, role and quotas (GET /v1/whoami)")):
        s = sub.add_parser(name, help=hlp)
        if name == "families":
            s.add_argument("--json", action="store_true")

    def spec(s):
        s.add_argument("--family", required=True)
        s.add_argument("--type")
        s.add_argument("--width", type=int)
        s.add_argument("--mask", help="member mask, e.g. 0x0000ffff")
        s.add_argument("--op", help="operator or expression (warp_allreduce, redux)")

    w = sub.add_parser("warp", help="run one warp primitive (POST /v1/warp)")
    spec(w)
    w.add_argument("--args", action="append", metavar="NAME=VALUE",
                   help="run-time argument: lane_mask=1, src_lane=0,1,2..., pred='{\"op\":\"gt\",\"value\":3}'")
    g = w.add_mutually_exclusive_group()
    g.add_argument("--iota", type=int, metavar="N", help="input 0, 1, ..., N-1")
    g.add_argument("--random", type=int, metavar="N", help="N random values (see --seed)")
    g.add_argument("--input", help="values: 1,2,3 or JSON (a list, or a list of per-lane arrays)")
    w.add_argument("--seed", type=int)
    w.add_argument("--elems", type=int, help="elements per lane with --iota/--random")
    w.add_argument("--active", help="active lanes: a hex mask (others return early)")
    w.add_argument("--backend", choices=["cuda", "emu"])
    w.add_argument("--json", action="store_true", help="print the whole JSON answer")

    cp = sub.add_parser("compile", help="compile a spec (POST /v1/compile)")
    spec(cp)
    cp.add_argument("--ptx", action="store_true")
    cp.add_argument("--source", action="store_true")
    cp.add_argument("--sass", action="store_true")
    cp.add_argument("--json", action="store_true")

    r = sub.add_parser("reduce", help="reduce data (POST /v1/reduce)")
    _data_args(r)
    s = sub.add_parser("scan", help="scan data (POST /v1/scan)")
    _data_args(s)
    s.add_argument("--exclusive", action="store_true")
    s.add_argument("--out", help="write the scanned data here as raw little-endian bytes")

    b = sub.add_parser("buffers", help="device-resident buffers (PUT/GET/DELETE /v1/buffers)")
    bs = b.add_subparsers(dest="bcmd", required=True)
    bp = bs.add_parser("put")
    bp.add_argument("file")
    bp.add_argument("--type", default="f32", choices=sorted(ELEM_SIZE))
    bp.add_argument("--ttl", type=float)
    bs.add_parser("list")
    for name in ("get", "delete"):
        bs.add_parser(name).add_argument("id")

    j = sub.add_parser("jobs", help="asynchronous jobs (POST/GET/DELETE /v1/jobs)")
    js = j.add_subparsers(dest="jcmd", required=True)
    jsub = js.add_parser("submit")
    jsub.add_argument("body", help='the job as JSON: {"kind": "reduce", "request": {...}} (\'-\' for stdin)')
    jsub.add_argument("--wait", action="store_true")
    js.add_parser("list").add_argument("--state", choices=["queued", "running", "done", "failed", "cancelled"])
    for name in ("get", "wait", "cancel"):
        js.add_parser(name).add_argument("id")

    sh = sub.add_parser("shm", help="shared-memory regions the daemon has mapped (GET/DELETE /v1/shm)")
    shs = sh.add_subparsers(dest="scmd", required=True)
    shs.add_parser("list")
    for name in ("get", "delete"):
        shs.add_parser(name).add_argument("id")

    a = ap.parse_args(argv)
    c = Client(a.url, timeout=a.timeout)
    try:
        if a.cmd == "health":
            _print_json({"health": c.health(), "ready": c.ready()})
        elif a.cmd == "whoami":
            me = c.whoami()
            print(f"{me['name']} ({me['role']})")
            for k, v in me.get("quotas", {}).items():
                print(f"  {k:<13} {'none' if v is None else v}")
        elif a.cmd == "info":
            _print_json(c.info())
        elif a.cmd == "families":
            fams = c.families()
            if a.json:
                _print_json(fams)
            else:
                for f in fams:
                    print(f"{f['name']:<16} {','.join(f.get('types', [])):<36} {f.get('output', ''):<10} "
                          f"{','.join(f.get('backends', []))}  {f.get('doc', '')}")
        elif a.cmd == "metrics":
            sys.stdout.write(c.metrics())
        elif a.cmd == "warp":
            inp = None
            if a.iota is not None:
                inp = {"iota": a.iota}
            elif a.random is not None:
                inp = {"random": a.random}
                if a.seed is not None:
                    inp["seed"] = a.seed
            elif a.input is not None:
                inp = _list(a.input)
            if isinstance(inp, dict) and a.elems:
                inp["elems"] = a.elems
            res = c.warp(a.family, a.type, a.width, a.mask, a.op, _kv(a.args) or None, inp, a.active, a.backend)
            _print_json(res) if a.json else _print_warp(res)
        elif a.cmd == "compile":
            res = c.compile(a.family, a.type, a.width, a.mask, a.op, a.ptx, a.source, a.sass)
            if a.json:
                _print_json(res)
            else:
                for k in ("key", "cache", "compile_ms", "instantiation", "lowered_name", "regs", "spills",
                          "cubin_bytes", "arch"):
                    if k in res:
                        print(f"{k:>14}: {res[k]}")
                if res.get("log"):
                    print("log:\n" + res["log"].rstrip())
                for k in ("source", "ptx", "sass"):
                    if res.get(k):
                        print(f"----- {k}\n{res[k].rstrip()}")
        elif a.cmd in ("reduce", "scan"):
            res = _run_data(c, a.cmd, a)
            if a.cmd == "scan" and getattr(a, "out", None) and isinstance(res, dict) and "data" in res:
                with open(a.out, "wb") as f:
                    f.write(pack(res["data"], a.type))
                print(f"wrote {len(res['data'])} elements to {a.out}", file=sys.stderr)
            if isinstance(res, (bytes, bytearray)):
                sys.stdout.buffer.write(res)
            elif a.json or a.cmd == "scan" or "value" not in res:
                _print_json(res)
            else:
                extra = " ".join(f"{k}={res[k]}" for k in ("count", "backend", "strategy") if k in res)
                print(f"{res['value']}    ({extra})")
        elif a.cmd == "buffers":
            if a.bcmd == "put":
                size = os.path.getsize(a.file)
                with open(a.file, "rb") as f:
                    _print_json(c.buffer_put(f, a.type, a.ttl, progress=progress_bar("upload")
                                             if size >= PROGRESS_MIN_BYTES else None))
            elif a.bcmd == "list":
                _print_json(c.buffers())
            elif a.bcmd == "get":
                _print_json(c.buffer(a.id))
            else:
                _print_json(c.buffer_delete(a.id))
        elif a.cmd == "jobs":
            if a.jcmd == "submit":
                body = json.loads(_read_file(a.body) if a.body == "-" else a.body)
                job = c.job_submit(body)
                _print_json(c.job_wait(job["id"], progress=progress_bar("job")) if a.wait else job)
            elif a.jcmd == "list":
                _print_json(c.jobs(a.state))
            elif a.jcmd == "get":
                _print_json(c.job(a.id))
            elif a.jcmd == "wait":
                _print_json(c.job_wait(a.id, progress=progress_bar("job")))
            else:
                _print_json(c.job_cancel(a.id))
        elif a.cmd == "shm":
            if a.scmd == "list":
                _print_json(c.shm_regions())
            elif a.scmd == "get":
                _print_json(c.shm_region(a.id))
            else:
                _print_json(c.shm_delete(a.id))
    except (WarpdError, OSError, ValueError) as e:
        for stream in _bars_open:
            stream.write("\n")
        _bars_open.clear()
        print(f"warpctl: error {e}" if isinstance(e, WarpdError) else f"warpctl: {e}", file=sys.stderr)
        return 1
    return 0
