"""client.py — Client: one warpd daemon over HTTP (or a Unix socket), a connection kept per thread, every
endpoint a method (health ... jobs), lists, bytes, files and numpy arrays sent as JSON or raw bodies. Its
shared-memory and CUDA methods come from the mixins _SharedMemory (shm.py) and _CudaIpc (ipc.py)."""
import base64
import http.client
import ipaddress
import json
import os
import threading
import time
import urllib.parse
import weakref

from .arrays import _fill, _is_array, _np, _number, array_bytes, to_array
from .cuda import _gpu_kind, _GpuArray
from .errors import WarpdError
from .ipc import _CudaIpc
from .progress import ProgressReader
from .resources import _Resources
from .shm import _SharedMemory
from .wire import _JSON_ENCODER, _UnixHTTPConnection, exchange, http_client_exchange

DEFAULT_URL = "http://127.0.0.1:8080"
SPIN_US = 2000                # a request polls its socket this long for the answer before it sleeps (Client spin_us)
TRANSPORTS = ("auto", "http", "shm", "ipc")
# reduce/scan fields a raw body can carry as query arguments (server/api/api_reduce.c); others go as JSON
_RAW_QUERY_FIELDS = {"family", "strategy", "block", "width", "accumulate", "exclusive", "inclusive", "init",
                     "radius", "backend", "check", "output", "compile", "map", "ddof"}


class Client(_SharedMemory, _CudaIpc):
    """One warpd daemon. Methods return the decoded JSON answer (dict) unless said otherwise."""

    def __init__(self, base_url=None, timeout=120.0, token=None, *, transport="auto", shm_prefix="/warpd",
                 shm_mode=None, shm_group=None, spin_us=SPIN_US, channel=True):
        """transport: how numpy and CUDA arrays reach the daemon unless a call says otherwise — "auto" (a
        shared() array's region, CUDA IPC for GPU arrays, a pooled region for numpy arrays of at least
        SHM_AUTO_MIN_BYTES, when the daemon is local; HTTP otherwise or when the daemon refuses), "http",
        "shm" (a region always; refusals raise) or "ipc" (GPU arrays by CUDA IPC; refusals raise; host
        arrays as "auto"). Lists, bytes and files always go by HTTP. shm_prefix: the daemon's --shm-prefix;
        shm_mode: the objects' permissions (default 0600: a daemon of another user cannot map them, and
        "auto" then goes by HTTP); shm_group: a group name or id the objects are given, with mode 0660 by
        default: "warpd-shm" lets the Debian package's daemon (its DynamicUser is in that group) map them,
        when this user is a member (adduser USER warpd-shm). spin_us: how long a request on a kept
        plain-HTTP or Unix-socket connection polls its socket for the answer before it sleeps in recv (a
        thread woken from recv comes back tens of microseconds later on a cold core: a repeated CUDA IPC
        reduce, the data plane); 0 sleeps at once. It spends that much of one CPU at most per request. channel:
        a repeated reduce of a CUDA array (its IPC buffer known) goes through a doorbell channel (POST
        /v1/channels: the request and answer pass through a small region of ours, no socket) when the
        daemon is local and gives one; False keeps it on HTTP."""
        self.base = (base_url or os.environ.get("WARPD") or DEFAULT_URL).rstrip("/")
        self.timeout = timeout
        self.spin_us = spin_us
        self.channel = channel
        self.token = token or os.environ.get("WARPD_TOKEN") or None  # sent as Authorization: Bearer
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
        if shm_group is not None and not isinstance(shm_group, int):
            import grp
            shm_group = grp.getgrnam(shm_group).gr_gid  # KeyError: no such group
        if shm_mode is None:
            shm_mode = 0o600 if shm_group is None else 0o660
        self.transport, self.shm_prefix, self.shm_mode = transport, shm_prefix, shm_mode
        self.shm_group = shm_group
        self.counts = {"http": 0, "shm": 0, "ipc": 0}  # arrays sent each way (reduce, scan, buffer_put)
        self.shm_refused = None  # why "auto" stopped using regions with this daemon ("403 shm_disabled"), or None
        self.ipc_refused = None  # likewise for CUDA IPC ("400 needs_gpu")
        self._ipc_no_output = False  # the daemon writes no scan into an IPC buffer: the scan comes back as bytes
        self._res = None         # _Resources: regions, the pool, IPC buffers; made on first use
        self._res_final = None
        self._lock = threading.Lock()
        self._tls = threading.local()  # each thread's kept connection (_send)
        self._fast_req = {}  # (origin, host line, buffer id, op) -> (a reduce's whole HTTP request, its JSON body)

    # -- lifetime: regions, pooled regions and IPC buffers go at close()
    def close(self):
        """Unregisters and unlinks this client's regions (shared() arrays stay valid memory here, no longer
        the daemon's) and deletes its cached CUDA IPC buffers. The client stays usable."""
        self._drop_connection()
        with self._lock:
            res, fin, self._res, self._res_final = self._res, self._res_final, None, None
        if fin is not None:
            fin.detach()
        if res is not None:
            res.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _resources(self):
        with self._lock:
            if self._res is None:
                self._res = _Resources(Client(self.base, self.timeout, self.token, transport="http"),
                                       self.shm_prefix, (self.shm_mode, self.shm_group))
                self._res_final = weakref.finalize(self, self._res.close)  # a client dropped unclosed, or exit
            return self._res

    def _count(self, way):
        with self._lock:
            self.counts[way] += 1

    def is_local(self):
        """True when the daemon shares this machine: a Unix socket, or a loopback address or localhost."""
        local = self.__dict__.get("_is_local")
        if local is None or local[0] != self.base:  # asked on every array sent: parsed once per base
            local = self.__dict__["_is_local"] = (self.base, self._is_local_uncached())
        return local[1]

    def _is_local_uncached(self):
        if self.base.startswith("unix:"):
            return True
        host = urllib.parse.urlsplit(self.base).hostname or ""
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def _transport(self, transport):
        t = self.transport if transport is None else transport
        if t not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {t!r}")
        return t

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
            data = _JSON_ENCODER.encode(body).encode()
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

    def _connect(self, url):
        """A new connection to the daemon, and the request target to send on it."""
        if self.base.startswith("unix:"):  # unix:/path/warpd.sock, then the request's path and query
            conn = _UnixHTTPConnection(self.base[5:], self.timeout)
            conn.warpd_origin = self.base
            return conn, url[len(self.base):] or "/"
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https"):
            raise WarpdError(0, "bad_url", "", f"{self.base}: only http://, https:// and unix:PATH")
        conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(u.hostname, u.port, timeout=self.timeout)
        conn.warpd_origin = f"{u.scheme}://{u.netloc}"  # what precedes the request target in this URL
        return conn, (u.path or "/") + (f"?{u.query}" if u.query else "")

    def _drop_connection(self):
        conn, self._tls.conn = getattr(self._tls, "conn", None), None
        if conn is not None:
            conn.close()

    def _send(self, method, url, data, headers):
        """Sends on this thread's kept connection (HTTP/1.1 keep-alive: a small request costs no TCP
        handshake), on a new one when there is none, the server closed it, or the body is a stream (which
        cannot be sent twice). A kept connection the server had closed is retried once on a new one.
        Plain HTTP with a body in memory takes _exchange (wire.exchange), a lean path of its own; TLS and
        streamed bodies go through http.client."""
        streamed = data is not None and not isinstance(data, (bytes, bytearray))
        for attempt in (0, 1):
            kept = getattr(self._tls, "conn", None)
            if kept is not None and (streamed or not url.startswith(kept.warpd_origin)):
                self._drop_connection()
                kept = None
            if kept is not None:
                conn, target = kept, url[len(kept.warpd_origin):] or "/"  # no URL parsing on a kept connection
            else:
                conn, target = self._connect(url)
            reused = kept is not None
            try:
                if streamed or isinstance(conn, http.client.HTTPSConnection):
                    status, rheaders, payload, closing = self._http_client_exchange(conn, method, target, data,
                                                                                    headers, reused)
                else:
                    status, rheaders, payload, closing = self._exchange(conn, method, target, data, headers,
                                                                        self.spin_us)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._forget(conn, kept)
                if reused and attempt == 0:
                    continue
                raise
            except BaseException:
                self._forget(conn, kept)
                raise
            if closing or status >= 400 or streamed:
                self._forget(conn, kept)
            elif conn is not kept:
                self._tls.conn = conn
            break
        if status >= 400:
            err = {}
            try:
                err = json.loads(payload or b"{}").get("error") or {}
            except (ValueError, AttributeError):
                pass
            raise WarpdError(status, err.get("code") or f"http_{status}", err.get("field") or "",
                             err.get("message") or payload.decode("utf-8", "replace").strip() or f"HTTP {status}")
        return status, rheaders, payload

    # the two ways of one exchange (wire.py), kept as Client's own so that a profiler can wrap them
    _exchange = staticmethod(exchange)
    _http_client_exchange = staticmethod(http_client_exchange)

    def _forget(self, conn, kept):
        if conn is kept:
            self._drop_connection()
        else:
            conn.close()

    def _json(self, method, path, body=None, **kw):
        status, headers, payload = self.request(method, path, body, **kw)
        if not payload:
            return {}
        if "json" not in headers.get("Content-Type", "json"):
            return payload
        return json.loads(payload.decode("utf-8"))  # the daemon writes UTF-8 (a str skips json's detection)

    # -- read-only endpoints
    def health(self):
        return self._json("GET", "/v1/health")

    def ready(self):
        return self._json("GET", "/v1/ready")

    def info(self):
        return self._json("GET", "/v1/info")

    def whoami(self):
        """Who this client's token is: {"name", "role" (read|run|admin), "quotas": {name: count or None}}."""
        return self._json("GET", "/v1/whoami")

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

    # -- reductions and scans
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
        self._count("http")
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

    def _second_input(self, first, data2, buffer2, type, extra):
        """A map over y (map=, op="dot"): the second input into extra as data2 (a list), data2_b64 (a numpy
        array's bytes, or a CuPy array's / CUDA tensor's copied to the host) or buffer2 (an id); the first
        input's type and length (the server answers 400 naming the field otherwise)."""
        if data2 is not None and buffer2 is not None:
            raise ValueError("give one of data2, buffer2")
        if buffer2 is not None:
            extra["buffer2"] = buffer2
            return
        if data2 is None:
            return
        kind = _gpu_kind(data2)
        if kind:
            g = _GpuArray(data2, kind, self._driver)
            data2, type = self._gpu_host(g), type or g.type
        if _is_array(data2):
            if type is None and _is_array(first):
                type = array_bytes(first[:0] if first.ndim else first.reshape(1)[:0], None)[1]
            if type is None and data2.dtype.kind in "iuf" and data2.dtype.name != "float32":
                # the first's type is the server's to say (a list or generate: f32, a buffer: its own): a
                # float32 array goes as bytes (the default type), another as a list read in that type
                wide = data2.dtype.kind in "iu" and data2.dtype.itemsize == 8  # exact past 2^53 as strings
                extra["data2"] = [str(v) for v in data2.reshape(-1).tolist()] if wide else data2.reshape(-1).tolist()
                return
            view, _ = array_bytes(data2, type)
            extra["data2_b64"] = base64.b64encode(view).decode()
        elif isinstance(data2, (bytes, bytearray, memoryview)):
            extra["data2_b64"] = base64.b64encode(bytes(data2)).decode()
        else:
            extra["data2"] = list(data2)

    def dot(self, a, b, type=None, *, full=False, **kw):
        """The dot product of two inputs of one type and length (lists, numpy arrays, CuPy arrays or CUDA
        tensors; or buffer ids with a=None, buffer=..., buffer2=...): POST /v1/reduce with "op": "dot" (map
        x*y, op sum, accumulated like a sum). Returns the value; full=True the whole answer."""
        got = self.reduce(a, type=type, op="dot", data2=b, **kw)
        return got if full else got["value"]

    def reduce(self, data=None, type=None, op="sum", *, data_b64=None, buffer=None, generate=None, raw=None,
               strategy=None, check=None, ddof=None, progress=None, transport=None, map=None, data2=None,
               buffer2=None, **extra):
        """POST /v1/reduce. One of: data (a list, inline JSON; or a numpy array, sent raw; or a CuPy array or
        PyTorch CUDA tensor), data_b64 (bytes or base64 text), buffer (id), generate ({"kind": "random",
        "n": N, "seed": S}), raw (bytes or a binary file, sent as application/octet-stream). type: f32
        unless given (an array's comes from its dtype). transport: how an array goes (see Client; lists,
        bytes and files always go by HTTP). Returns {"value", "count", "backend", "strategy", "key",
        "timing", ...}; for an array in, results that are arrays (segmented_reduce, per-group) also come as
        "data", a numpy array. op may name a statistic or norm: "mean", "var", "std" (ddof=0 or 1, numpy's),
        "norm1", "norm2", "norminf", "count_nonzero": c.reduce(a, op="var", ddof=1)["value"] (docs/api.md).
        map: an expression over x applied to each element first ("x*x", "abs(x)", "x > 0 ? 1 : 0"); over y
        too with a second input data2 (a list or array of the same type and length) or buffer2 (an id);
        op="dot" is map x*y, op sum."""
        if (data is not None and type is None and transport is None and map is None and data2 is None and
                buffer2 is None and raw is None and strategy is None and check is None and ddof is None and
                progress is None and not extra and data_b64 is None and buffer is None and generate is None):
            got = self._ipc_reduce_fast(data, op)  # a GPU array reduced again: the lean path, or None
            if got is not None:
                return got
        t = self._transport(transport)
        extra = dict(strategy=strategy, check=check, ddof=ddof, map=map, **extra)
        x = raw if data is None else data
        self._second_input(x, data2, buffer2, type, extra)
        kind = _gpu_kind(x) if x is not None else None
        if kind:
            return self._gpu_job("/v1/reduce", x, kind, type, op, t, extra, progress)
        if _is_array(x):
            got = self._shm_job("/v1/reduce", x, type, op, t, extra, progress)
            if got is not None:
                return got
        return self._run("/v1/reduce", type, op, data, data_b64, buffer, generate, raw, progress, None, extra)

    def scan(self, data=None, type=None, op="sum", *, data_b64=None, buffer=None, generate=None, raw=None,
             strategy=None, exclusive=None, check=None, raw_out=False, progress=None, transport=None, out=None,
             map=None, data2=None, buffer2=None, **extra):
        """POST /v1/scan; the same inputs as reduce. raw_out=True asks for the scanned data as raw bytes
        (Accept: application/octet-stream) and returns bytes (unpack(b, type) gives the list). A numpy
        array in gives a new numpy array out (flat, of its type; to_array), the answer's other fields
        dropped: through a region it is a copy of what the daemon wrote into a pooled region, so it is the
        caller's. out= (an array of the result's size and type) is filled and returned instead: the daemon
        writes into it directly when it lies in a shared() region. A CuPy array or a CUDA tensor in gives
        one of the same kind, shape and device out (written by the daemon through CUDA IPC, or copied).
        map, data2, buffer2: as reduce's (a scan of squares: map="x*x")."""
        t = self._transport(transport)
        extra = dict(strategy=strategy, exclusive=exclusive, check=check, map=map, **extra)
        x = raw if data is None else data
        self._second_input(x, data2, buffer2, type, extra)
        kind = _gpu_kind(x) if x is not None else None
        if kind:
            return self._gpu_job("/v1/scan", x, kind, type, op, t, extra, progress, scan=True, out=out)
        array_in = _is_array(x)
        if array_in and not raw_out:
            got = self._shm_job("/v1/scan", x, type, op, t, extra, progress, scan=True, out=out)
            if got is not None:
                return got
        if array_in and type is None:
            type = array_bytes(x[:0] if x.ndim else x.reshape(1)[:0], None)[1]  # the dtype's type, no copy
        got = self._run("/v1/scan", type, op, data, data_b64, buffer, generate, raw, progress,
                        "application/octet-stream" if raw_out or array_in else None, extra)
        if array_in and not raw_out and isinstance(got, (bytes, bytearray)):
            got = to_array(got, type or "f32")
            return _fill(out, got) if out is not None else got
        return got

    def reduce_by_key(self, keys, values, op="sum", *, type=None, key_type=None, output=None, **extra):
        """POST /v1/reduce with family reduce_by_key: each run of equal consecutive keys reduced to one value
        with op (CUB's ReduceByKey). keys and values: lists or numpy arrays of one length (an array's type
        comes from its dtype; else values f32 and keys i32 unless type / key_type say), or buffer ids (str).
        Returns (run keys, run values): numpy arrays when numpy is there, else lists. output="buffer":
        the two new buffers' ids instead. Extra fields (block, accumulate, backend, ...) go in the body."""
        def form(x, t, default):
            if isinstance(x, str):
                return {"buffer": x}, t
            if _is_array(x):
                raw, t = array_bytes(x, t)
                return {"type": t, "data_b64": base64.b64encode(raw).decode("ascii")}, t
            t = t or default
            wide = t in ("i64", "u64")  # 64-bit integers travel as strings (exact past 2^53)
            return {"type": t, "data": [str(_number(v, t)) if wide else v for v in x]}, t

        kform, key_type = form(keys, key_type, "i32")
        vform, type = form(values, type, "f32")
        body = {"family": "reduce_by_key", "op": op, "keys": kform, **{k: v for k, v in extra.items() if v is not None}}
        body.update(vform)  # type and data / data_b64, or buffer
        if type:
            body["type"] = type
        body["output"] = output or ("b64" if _np is not None else "json")
        got = self._json("POST", "/v1/reduce", body)
        if output == "buffer":
            return got["keys"]["buffer"], got["data"]["buffer"]
        kt, vt = got["keys_type"], got["type"]
        if "keys_b64" in got:
            return (to_array(base64.b64decode(got["keys_b64"]), kt), to_array(base64.b64decode(got["data_b64"]), vt))
        return ([_number(v, kt) for v in got["keys"]], [_number(v, vt) for v in got["data"]])

    # -- device-resident buffers
    def histogram(self, a=None, bins=10, range=None, *, type=None, buffer=None, generate=None, strategy=None,
                  check=None, answer=False, **extra):
        """numpy's np.histogram(a, bins, range=(lo, hi)) on the daemon (POST /v1/reduce, family histogram):
        equal bins, count for count numpy's. a: a numpy array (sent raw, its type from the dtype) or a list
        (JSON; type f32 unless given); or buffer=ID, or generate={"kind": ..., "n": N}. range is required
        (numpy's default, the data's min and max, would be a pass of its own). Returns (counts, edges) as
        numpy does: counts a uint64 array, edges bins + 1 values of the compare type (float32 for f32,
        float16 for f16, else float64); lists without numpy. answer=True adds the whole answer (in_range,
        out_of_range, backend, timing, ...) as a third item."""
        if range is None:
            raise ValueError("histogram needs range=(lo, hi)")
        lo, hi = (float(v) for v in range)
        fields = {k: v for k, v in dict(strategy=strategy, check=check, **extra).items() if v is not None}
        if _is_array(a):  # raw bytes from the array's memory, the fields as query arguments
            view, t = array_bytes(a, type)
            query = {"family": "histogram", "type": t, "bins": int(bins), "range": f"{lo!r},{hi!r}",
                     **{k: (json.dumps(v) if isinstance(v, bool) else v) for k, v in fields.items()}}
            _, _, payload = self.request("POST", "/v1/reduce", raw=view, query=query)
        else:
            body = {"family": "histogram", "bins": int(bins), "range": [lo, hi], **fields}
            if type is not None or buffer is None:
                body["type"] = type or "f32"
            given = [(k, v) for k, v in (("data", a), ("buffer", buffer), ("generate", generate)) if v is not None]
            if len(given) != 1:
                raise ValueError("give one of a, buffer, generate")
            body[given[0][0]] = list(a) if given[0][0] == "data" else given[0][1]
            _, _, payload = self.request("POST", "/v1/reduce", body)
        self._count("http")
        ans = json.loads(payload)
        counts, edges = [int(c) for c in ans["counts"]], ans["edges"]
        if _np is not None:
            edge_dtype = {"f32": _np.float32, "f16": _np.float16}.get(ans.get("edge_type"), _np.float64)
            counts, edges = _np.array(counts, dtype=_np.uint64), _np.array(edges, dtype=_np.float64).astype(edge_dtype)
        return (counts, edges, ans) if answer else (counts, edges)

    def buffer_put(self, data, type=None, ttl=None, progress=None, transport=None):
        """PUT /v1/buffers: a list (sent as JSON), bytes / a binary file (sent raw) or a numpy array (sent raw
        from its memory, or through a region as reduce's; type from its dtype unless given); a CuPy array
        or CUDA tensor is copied to the host first (ipc_buffer() makes a buffer over it without a copy).
        Returns {"id", ...}."""
        t = self._transport(transport)
        kind = _gpu_kind(data)
        if kind:
            g = _GpuArray(data, kind, self._driver)
            data, type = self._gpu_host(g), type or g.type
        if _is_array(data):
            got = self._shm_job("/v1/buffers", data, type, None, t, {"ttl": ttl}, progress, put=True)
            if got is not None:
                return got
            data, type = array_bytes(data, type)
        if type is None:
            raise ValueError("buffer_put needs type= (i32 u32 i64 u64 f32 f64 f16 bf16) for a list or bytes")
        if isinstance(data, (list, tuple)):
            body = {"type": type, "data": list(data)}
            if ttl is not None:
                body["ttl"] = ttl
            return self._json("PUT", "/v1/buffers", body)
        got = self._json("PUT", "/v1/buffers", raw=data, query={"type": type, "ttl": ttl}, progress=progress)
        self._count("http")
        return got

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
