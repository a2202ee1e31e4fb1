#!/usr/bin/env python3
"""warpd.py — a standard-library client and CLI for the warpd HTTP API (DESIGN.md §4).

    from warpd import Client, WarpdError
    c = Client("http://127.0.0.1:8080")          # or $WARPD; token= or $WARPD_TOKEN for a daemon with --token-file
    c = Client("http://127.0.0.1:8080")          # or $WARPD; "unix:/path/warpd.sock" for a Unix socket
    r = c.warp("shfl_xor", width=16, args={"lane_mask": 1}, input={"iota": 32})
    r["output"]  # [1, 0, 3, 2, ...]
    c.reduce([1.5, 2, 3], type="f32", op="sum")["value"]

With numpy installed (optional), reduce/scan/buffer_put also take numpy arrays, sent as raw bytes
straight from the array's memory (no list), their warpd type from the dtype (int32 → i32, ...,
float16 → f16); scan of an array returns an array:
    c.scan(np.arange(5, dtype=np.int32), op="sum")   # array([ 0,  1,  3,  6, 10], dtype=int32)

Every error the server returns ({"error": {"code", "field", "message"}}) becomes
WarpdError(status, code, field, message); an unreachable daemon is WarpdError(0, "connection_failed").

CLI (python3 clients/python/warpd.py --help):
    warpd.py warp --family shfl_xor --width 16 --args lane_mask=1 --iota 32
    warpd.py compile --family warp_allreduce --type f32 --op max --ptx
    warpd.py info | health | families | metrics
    warpd.py reduce --type f32 --op sum data.f32        (raw little-endian file; progress bar on stderr)
    warpd.py scan --type i32 --op sum --data 1,2,3,4
    warpd.py buffers put data.f32 --type f32 | list | get ID | delete ID
    warpd.py jobs submit '{"kind":"reduce","request":{...}}' --wait | list | get ID | wait ID | cancel ID
"""
import argparse
import base64
import http.client
import io
import json
import math
import os
import socket
import struct
import sys
import time
import urllib.parse

__all__ = ["Client", "WarpdError", "pack", "unpack", "ELEM_SIZE"]

DEFAULT_URL = "http://127.0.0.1:8080"
ELEM_SIZE = {"i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8, "f16": 2, "bf16": 2}
_STRUCT = {"i32": "i", "u32": "I", "i64": "q", "u64": "Q", "f32": "f", "f64": "d", "f16": "e"}
PROGRESS_MIN_BYTES = 1 << 20  # uploads at least this large show a progress bar (CLI)
__version__ = "0.1.0"  # the daemon's (server/engine/app.h WP_VERSION); pyproject.toml reads it from here

try:  # optional: without numpy, lists, bytes and files work as before
    import numpy as _np
except ImportError:
    _np = None

# numpy dtype name → warpd type ("bfloat16" is ml_dtypes' dtype, when an array has it)
NUMPY_TYPES = {"int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64", "float32": "f32",
               "float64": "f64", "float16": "f16", "bfloat16": "bf16"}
# reduce/scan fields a raw body can carry as query arguments (server/api/api_reduce.c); others go as JSON
_RAW_QUERY_FIELDS = {"family", "strategy", "block", "width", "accumulate", "exclusive", "inclusive", "init",
                     "radius", "backend", "check", "output", "compile"}


class WarpdError(Exception):
    """An error answer of the daemon: HTTP status, stable code, the request field at fault, message."""

    def __init__(self, status, code, field="", message=""):
        super().__init__(f"{status} {code}" + (f" ({field})" if field else "") + (f": {message}" if message else ""))
        self.status, self.code, self.field, self.message = status, code, field or "", message or ""


# ---------------------------------------------------------------- binary data
def _bf16_bits(x):
    """float → bfloat16 bits, round to nearest even (NaN stays NaN)."""
    (b,) = struct.unpack("<I", struct.pack("<f", x))
    if math.isnan(x):
        return (b >> 16) | 0x40
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def pack(values, type):
    """A list of numbers → little-endian bytes of `type` (what data_b64 and raw bodies carry)."""
    if type not in ELEM_SIZE:
        raise ValueError(f"unknown type {type!r}; one of {' '.join(ELEM_SIZE)}")
    if _is_array(values):
        return bytes(array_bytes(values, type)[0])
    vals = [_number(v, type) for v in values]
    if type == "bf16":
        return struct.pack(f"<{len(vals)}H", *[_bf16_bits(float(v)) for v in vals])
    return struct.pack(f"<{len(vals)}{_STRUCT[type]}", *vals)


def unpack(data, type):
    """Little-endian bytes of `type` → a list of numbers."""
    size = ELEM_SIZE[type]
    if len(data) % size:
        raise ValueError(f"{len(data)} bytes is not a whole number of {type} elements")
    n = len(data) // size
    if type == "bf16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in struct.unpack(f"<{n}H", data)]
    return list(struct.unpack(f"<{n}{_STRUCT[type]}", data))


def _number(v, type):
    if isinstance(v, str):  # JSON spellings: 64-bit integers as strings, "NaN", "Infinity"
        s = v.strip()
        if s in ("NaN", "nan"):
            return math.nan
        if s in ("Infinity", "inf", "+Infinity"):
            return math.inf
        if s in ("-Infinity", "-inf"):
            return -math.inf
        return int(s, 0) if type[0] in "iu" else float(s)
    return int(v) if type[0] in "iu" else float(v)


def _is_array(x):
    return _np is not None and isinstance(x, _np.ndarray)


def _numpy_dtype(type):
    """The little-endian numpy dtype of a warpd type; None for bf16 unless ml_dtypes is installed."""
    if type == "bf16":
        try:
            import ml_dtypes
        except ImportError:
            return None
        return _np.dtype(ml_dtypes.bfloat16)
    return _np.dtype("<" + {"i": "i", "u": "u", "f": "f"}[type[0]] + str(ELEM_SIZE[type]))


def _bf16_bits_array(a):
    """A float array → bfloat16 bits (uint16), round to nearest even, NaN stays NaN (as _bf16_bits)."""
    b = _np.ascontiguousarray(a, dtype="<f4").view("<u4")
    bits = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype("<u2")
    nan = _np.isnan(b.view("<f4"))
    bits[nan] = ((b[nan] >> 16) | 0x40).astype("<u2")
    return bits


def array_bytes(arr, type=None):
    """A numpy array → (a memoryview of its bytes, its warpd type), for a raw body: no copy when the array
    is already contiguous, little-endian and of `type`. type=None takes it from the dtype; another type
    converts (astype; bf16 from floats rounds to nearest even, and uint16 arrays are taken as bf16 bits).
    Several dimensions are sent in C order, flattened."""
    have = NUMPY_TYPES.get(arr.dtype.name)
    if type is None:
        if have is None:
            raise ValueError(f"numpy dtype {arr.dtype} has no warpd type; use one of "
                             f"{', '.join(n for n in NUMPY_TYPES if n != 'bfloat16')} or pass type=")
        type = have
    if type not in ELEM_SIZE:
        raise ValueError(f"unknown type {type!r}; one of {' '.join(ELEM_SIZE)}")
    if type != have:
        want = _numpy_dtype(type)
        if type == "bf16" and arr.dtype == _np.uint16:
            arr = arr.astype("<u2", copy=False)
        elif want is None:  # bf16 without ml_dtypes: round the values to bfloat16 bits here
            arr = _bf16_bits_array(arr)
        else:
            arr = arr.astype(want)
    elif arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    arr = _np.ascontiguousarray(arr).reshape(-1)
    return memoryview(arr.view(_np.uint8)), type


def to_array(data, type):
    """Little-endian bytes of `type` → a numpy array (bf16: ml_dtypes' bfloat16, else float32 values)."""
    if len(data) % ELEM_SIZE[type]:
        raise ValueError(f"{len(data)} bytes is not a whole number of {type} elements")
    dt = _numpy_dtype(type)
    if dt is None:  # bf16 bits → the float32 they are the top half of
        return (_np.frombuffer(data, dtype="<u2").astype("<u4") << 16).view("<f4")
    return _np.frombuffer(data, dtype=dt).copy()


class ProgressReader(io.RawIOBase):
    """A readable body that reports how much of it was sent: progress(done_bytes, total_bytes)."""

    def __init__(self, data, progress, chunk=1 << 20):
        # bytes-like data is read as slices of one memoryview (a numpy array's memory is not copied)
        self._view = memoryview(data).cast("B") if isinstance(data, (bytes, bytearray, memoryview)) else None
        self._f = data
        self._total = len(self._view) if self._view is not None else _file_size(data)
        self._done, self._progress, self._chunk = 0, progress, chunk

    def __len__(self):
        return self._total

    def readable(self):
        return True

    def read(self, n=-1):
        n = self._chunk if n is None or n < 0 else min(n, self._chunk)
        b = self._view[self._done:self._done + n] if self._view is not None else self._f.read(n)
        self._done += len(b)
        if self._progress:
            self._progress(self._done, self._total)
        return b


def _file_size(f):
    pos = f.tell()
    f.seek(0, os.SEEK_END)
    end = f.tell()
    f.seek(pos)
    return end - pos


_bars_open = set()  # streams with an unfinished bar: an error message starts on a new line


def progress_bar(label="upload", stream=None, width=30):
    """A progress callback drawing `label [#####     ]  42%  12.0/28.6 MiB` on stderr."""
    stream = stream or sys.stderr
    state = {"last": -1.0}

    def show(done, total):
        frac = 1.0 if not total else min(1.0, done / total)
        if frac < 1.0 and frac - state["last"] < 0.01:
            return
        state["last"] = frac
        _bars_open.add(stream)
        fill = int(frac * width)
        if total and total > 1024:
            amount = f"{done / 1048576:.1f}/{total / 1048576:.1f} MiB"
        else:
            amount = f"{done}/{total}"
        stream.write(f"\r{label} [{'#' * fill}{' ' * (width - fill)}] {frac * 100:3.0f}%  {amount}")
        if frac >= 1.0:
            stream.write("\n")
            _bars_open.discard(stream)
        stream.flush()

    return show


# ---------------------------------------------------------------- the client
class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket file (warpd --listen unix:PATH); requests say Host: localhost."""

    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Client:
    """One warpd daemon. Methods return the decoded JSON answer (dict) unless said otherwise."""

    def __init__(self, base_url=None, timeout=120.0, token=None):
        self.base = (base_url or os.environ.get("WARPD") or DEFAULT_URL).rstrip("/")
        self.timeout = timeout
        self.token = token or os.environ.get("WARPD_TOKEN") or None  # sent as Authorization: Bearer

    # -- plumbing
    def request(self, method, path, body=None, *, query=None, raw=None, content_type=None, accept=None,
                progress=None):
        """One HTTP request; returns (status, headers, body bytes); raises WarpdError on 4xx/5xx."""
        url = self.base + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        elif raw is not None:
            headers["Content-Type"] = content_type or "application/octet-stream"
            if progress is not None or not isinstance(raw, (bytes, bytearray)):
                data = ProgressReader(raw, progress)
                headers["Content-Length"] = str(len(data))
            else:
                data = bytes(raw)
        if accept:
            headers["Accept"] = accept
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            return self._send(method, url, data, headers)
        except (ConnectionError, TimeoutError, OSError, http.client.HTTPException) as e:
            raise WarpdError(0, "connection_failed", "", f"{self.base}: {e}") from None

    def _send(self, method, url, data, headers):
        if self.base.startswith("unix:"):  # unix:/path/warpd.sock, then the request's path and query
            conn, target = _UnixHTTPConnection(self.base[5:], self.timeout), url[len(self.base):] or "/"
        else:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https"):
                raise WarpdError(0, "bad_url", "", f"{self.base}: only http://, https:// and unix:PATH")
            conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
            conn = conn_cls(u.hostname, u.port, timeout=self.timeout)
            target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        try:
            try:
                conn.request(method, target, body=data, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                # The server may answer (404, 413, ...) and close before it has read a large body: its answer
                # is still in the socket, so read it rather than report a broken pipe.
                pass
            resp = conn.getresponse()
            payload = resp.read()
            status, rheaders = resp.status, {k.title(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        if status >= 400:
            err = {}
            try:
                err = json.loads(payload or b"{}").get("error") or {}
            except (ValueError, AttributeError):
                pass
            raise WarpdError(status, err.get("code") or f"http_{status}", err.get("field") or "",
                             err.get("message") or payload.decode("utf-8", "replace").strip() or resp.reason)
        return status, rheaders, payload

    def _json(self, method, path, body=None, **kw):
        status, headers, payload = self.request(method, path, body, **kw)
        if not payload:
            return {}
        if "json" not in headers.get("Content-Type", "json"):
            return payload
        return json.loads(payload)

    # -- read-only endpoints
    def health(self):
        return self._json("GET", "/v1/health")

    def ready(self):
        return self._json("GET", "/v1/ready")

    def info(self):
        return self._json("GET", "/v1/info")

    def families(self):
        """The list of families (each with types, widths, args, ops, output, backends)."""
        return self._json("GET", "/v1/families")["families"]

    def metrics(self):
        """Prometheus text."""
        return self.request("GET", "/metrics")[2].decode()

    # -- warp primitives and compiling
    @staticmethod
    def _spec(family, type, width, mask, op):
        body = {"family": family}
        for k, v in (("type", type), ("width", width), ("mask", mask), ("op", op)):
            if v is not None:
                body[k] = v
        return body

    def warp(self, family, type=None, width=None, mask=None, op=None, args=None, input=None, active=None,
             backend=None):
        """POST /v1/warp. input: a list (one value or array per lane), {"iota": n}, {"random": n, "seed": s};
        args: e.g. {"lane_mask": 1}, {"src_lane": [..per lane..]}, {"pred": {"op": "gt", "value": 3}};
        active: a hex lane mask or a list of booleans."""
        body = self._spec(family, type, width, mask, op)
        for k, v in (("args", args), ("input", input), ("active", active), ("backend", backend)):
            if v is not None:
                body[k] = v
        return self._json("POST", "/v1/warp", body)

    def compile(self, family, type=None, width=None, mask=None, op=None, ptx=False, source=False, sass=False):
        """POST /v1/compile: key, cache, compile_ms, instantiation, regs, spills, log (+ ptx/source/sass)."""
        body = self._spec(family, type, width, mask, op)
        for k, v in (("ptx", ptx), ("source", source), ("sass", sass)):
            if v:
                body[k] = True
        return self._json("POST", "/v1/compile", body)

    # -- reductions and scans (issue 3)
    def _job_body(self, type, op, data, data_b64, buffer, generate, extra):
        body = {"op": op} if type is None else {"type": type, "op": op}
        given = [k for k, v in (("data", data), ("data_b64", data_b64), ("buffer", buffer), ("generate", generate))
                 if v is not None]
        if len(given) > 1:
            raise ValueError(f"give one of data, data_b64, buffer, generate (got {', '.join(given)})")
        if data is not None:
            body["data"] = list(data)
        if data_b64 is not None:
            body["data_b64"] = data_b64 if isinstance(data_b64, str) else base64.b64encode(data_b64).decode()
        if buffer is not None:
            body["buffer"] = buffer
        if generate is not None:
            body["generate"] = generate
        body.update({k: v for k, v in extra.items() if v is not None})
        return body

    def _run(self, path, type, op, data, data_b64, buffer, generate, raw, progress, accept, extra):
        array_in = _is_array(data) or _is_array(raw)
        if array_in:  # numpy: raw bytes from the array's memory
            view, type = array_bytes(raw if data is None else data, type)
            if any(v is not None for k, v in extra.items() if k not in _RAW_QUERY_FIELDS):
                data, data_b64, raw = None, base64.b64encode(view).decode(), None  # e.g. offsets, weights: JSON
            else:
                data, raw = None, view
        if type is None and buffer is None:
            type = "f32"  # a buffer knows its type
        answer = self._run_once(path, type, op, data, data_b64, buffer, generate, raw, progress, accept, extra)
        if array_in and isinstance(answer, dict) and "data_b64" in answer and "data" not in answer:
            answer["data"] = to_array(base64.b64decode(answer["data_b64"]), answer.get("type", type))
        return answer

    def _run_once(self, path, type, op, data, data_b64, buffer, generate, raw, progress, accept, extra):
        if raw is not None:  # raw little-endian bytes (or an open binary file): ?type=&op= on the URL
            query = {"type": type, "op": op, **{k: (json.dumps(v) if isinstance(v, bool) else v)
                                                for k, v in extra.items() if v is not None}}
            status, headers, payload = self.request("POST", path, raw=raw, query=query, progress=progress,
                                                    accept=accept)
        else:
            status, headers, payload = self.request("POST", path, self._job_body(type, op, data, data_b64, buffer,
                                                                                 generate, extra), accept=accept)
        if "json" in headers.get("Content-Type", ""):
            return json.loads(payload)
        return payload

    def reduce(self, data=None, type=None, op="sum", *, data_b64=None, buffer=None, generate=None, raw=None,
               strategy=None, check=None, progress=None, **extra):
        """POST /v1/reduce. One of: data (a list, inline JSON; or a numpy array, sent raw), data_b64 (bytes or
        base64 text), buffer (id), generate ({"kind": "random", "n": N, "seed": S}), raw (bytes or a binary
        file, sent as application/octet-stream). type: f32 unless given (a numpy array's comes from its
        dtype). Returns {"value", "count", "backend", "strategy", "key", "timing", ...}; for an array in, results
        that are arrays (segmented_reduce, per-group) also come as "data", a numpy array."""
        return self._run("/v1/reduce", type, op, data, data_b64, buffer, generate, raw, progress, None,
                         dict(strategy=strategy, check=check, **extra))

    def scan(self, data=None, type=None, op="sum", *, data_b64=None, buffer=None, generate=None, raw=None,
             strategy=None, exclusive=None, check=None, raw_out=False, progress=None, **extra):
        """POST /v1/scan; the same inputs as reduce. raw_out=True asks for the scanned data as raw bytes
        (Accept: application/octet-stream) and returns bytes (unpack(b, type) gives the list). A numpy
        array in gives a numpy array out, of its type (to_array); the answer's other fields are dropped."""
        array_in = _is_array(data) or _is_array(raw)
        if array_in and type is None:
            type = array_bytes((raw if data is None else data)[:0], None)[1]  # the dtype's type, no copy
        got = self._run("/v1/scan", type, op, data, data_b64, buffer, generate, raw, progress,
                        "application/octet-stream" if raw_out or array_in else None,
                        dict(strategy=strategy, exclusive=exclusive, check=check, **extra))
        if array_in and not raw_out and isinstance(got, (bytes, bytearray)):
            return to_array(got, type or "f32")
        return got

    # -- device-resident buffers
    def buffer_put(self, data, type=None, ttl=None, progress=None):
        """PUT /v1/buffers: a list (sent as JSON), bytes / a binary file (sent raw) or a numpy array (sent raw
        from its memory; type from its dtype unless given). Returns {"id", ...}."""
        if _is_array(data):
            data, type = array_bytes(data, type)
        if type is None:
            raise ValueError("buffer_put needs type= (i32 u32 i64 u64 f32 f64 f16 bf16) for a list or bytes")
        if isinstance(data, (list, tuple)):
            body = {"type": type, "data": list(data)}
            if ttl is not None:
                body["ttl"] = ttl
            return self._json("PUT", "/v1/buffers", body)
        return self._json("PUT", "/v1/buffers", raw=data, query={"type": type, "ttl": ttl}, progress=progress)

    def buffers(self):
        """GET /v1/buffers: the buffers held."""
        return self._json("GET", "/v1/buffers")

    def buffer(self, buffer_id):
        """GET /v1/buffers/{id}: type, count, bytes, expiry."""
        return self._json("GET", "/v1/buffers/" + urllib.parse.quote(str(buffer_id), safe=""))

    def buffer_delete(self, buffer_id):
        return self._json("DELETE", "/v1/buffers/" + urllib.parse.quote(str(buffer_id), safe=""))

    # -- asynchronous jobs (server/api/api_jobs.c)
    def job_submit(self, kind, request=None):
        """POST /v1/jobs {"kind": "reduce"|"scan"|"warp"|"compile"|..., "request": {that endpoint's body}};
        the server answers 202 {"id", "state": "queued", "location", ...}. A dict as `kind` is sent as is."""
        body = kind if isinstance(kind, dict) else {"kind": kind, "request": request if request is not None else {}}
        return self._json("POST", "/v1/jobs", body)

    def jobs(self, state=None):
        """GET /v1/jobs: the jobs held (optionally only queued|running|done|failed|cancelled), no results."""
        return self._json("GET", "/v1/jobs", query={"state": state} if state else None)

    def job(self, job_id):
        """GET /v1/jobs/{id}: state, progress, times and, once finished, "status" and "result" or "error"."""
        return self._json("GET", "/v1/jobs/" + urllib.parse.quote(str(job_id), safe=""))

    def job_cancel(self, job_id):
        """DELETE /v1/jobs/{id}: cancels a queued or running job, forgets a finished one."""
        return self._json("DELETE", "/v1/jobs/" + urllib.parse.quote(str(job_id), safe=""))

    def job_wait(self, job_id, poll=0.05, timeout=None, progress=None, raise_failed=True):
        """Polls GET /v1/jobs/{id} while it is queued or running, calling progress(fraction, 1.0); returns
        the finished job. A failed job raises its endpoint's error as WarpdError (raise_failed=True)."""
        t0 = time.monotonic()
        while True:
            j = self.job(job_id)
            state = j.get("state", "")
            if progress and isinstance(j.get("progress"), (int, float)):
                progress(1.0 if state == "done" else float(j["progress"]), 1.0)
            if state not in ("queued", "running"):
                err = j.get("error")
                if raise_failed and state == "failed" and isinstance(err, dict):
                    raise WarpdError(j.get("status", 0), err.get("code", "job_failed"), err.get("field", ""),
                                     err.get("message", ""))
                return j
            if timeout is not None and time.monotonic() - t0 > timeout:
                raise TimeoutError(f"job {job_id} still {state} after {timeout} s")
            time.sleep(poll)
            poll = min(poll * 1.5, 1.0)


# ---------------------------------------------------------------- CLI
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
            raise SystemExit(f"warpd: --args wants name=value, got {item!r}")
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
    p.add_argument("--op", default="sum", help="sum prod min max and or xor, or an expression in a and b")
    p.add_argument("--data", help="inline values: 1,2,3 or a JSON list")
    p.add_argument("--b64", action="store_true", help="send FILE as data_b64 inside JSON instead of a raw body")
    p.add_argument("--buffer", help="the id of a buffer uploaded with 'buffers put'")
    p.add_argument("--generate", metavar="KIND:N[:SEED]", help="made on the device: iota:N, random:N:SEED, constant:N")
    p.add_argument("--strategy", help="gmem smem shfl_xor shfl_down redux atomic (default: the fastest)")
    p.add_argument("--check", action="store_true", help="also compute a float64 CPU reference")
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
    extra = {"strategy": a.strategy, "check": True if a.check else None}
    if kind == "scan":
        if a.exclusive:
            extra["exclusive"] = True
    sources = [x for x in (a.file, a.data, a.buffer, a.generate) if x is not None]
    if len(sources) != 1:
        raise SystemExit(f"warpd {kind}: give exactly one of FILE, --data, --buffer, --generate")
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
    ap = argparse.ArgumentParser(prog="warpd.py", description="Client for the warpd daemon ($WARPD, default "
                                 + DEFAULT_URL + "; $WARPD_TOKEN: its token, when it has one).")
    ap.add_argument("--url", default=None, help="daemon base URL (default $WARPD or " + DEFAULT_URL + ")")
    ap.add_argument("--timeout", type=float, default=600.0)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, hlp in (("health", "liveness and readiness"), ("info", "version, backend, device, cache"),
                      ("families", "every kernel family"), ("metrics", "Prometheus text")):
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

    a = ap.parse_args(argv)
    c = Client(a.url, timeout=a.timeout)
    try:
        if a.cmd == "health":
            _print_json({"health": c.health(), "ready": c.ready()})
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
    except (WarpdError, OSError, ValueError) as e:
        for stream in _bars_open:
            stream.write("\n")
        _bars_open.clear()
        print(f"warpd: error {e}" if isinstance(e, WarpdError) else f"warpd: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
