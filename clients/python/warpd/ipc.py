"""ipc.py — the Client's CUDA arrays (a mixin of Client): CUDA IPC, where the daemon reads and writes a CuPy
array or CUDA tensor in place (ipc_buffer, the "ipc" and "auto" transports), the lean path of a repeated
IPC reduce (a kept socket or the doorbell channel), and the copy to the host when IPC is refused."""
import http.client
import json
import time

from .arrays import _bf16_bits_array, _fill_gpu, _np
from .channel import CHANNEL_RETRY_S, _channels_usable
from .cuda import CudaError, _CudaDriver, _gpu_kind, _GpuArray, _ipc_spec, _lean_facts
from .errors import _IPC_REFUSALS, WarpdError, _route_missing
from .wire import _JSON_ENCODER, _recv_head

IPC_CACHE_MAX = 64            # CUDA IPC buffers a client keeps registered (least recently used go first)
IPC_ALIGN = 16                # a CUDA array goes by IPC from an address that is a multiple of this: the
                              # daemon's kernels load 16-byte vectors (templates/reduce.cu), so another start
                              # is copied on the device first (a misaligned load kills the daemon's context)


class _CudaIpc:
    """The Client's CUDA-array methods (uses request, _json, _resources, _count, is_local, reduce, scan,
    _tls and _drop_connection of Client)."""

    # -- CUDA arrays: CUDA IPC (the daemon reads and writes them in place), else a copy to the host
    def _driver(self):
        res = self._resources()
        with res.lock:
            if res.cuda is None:
                res.cuda = _CudaDriver()
            return res.cuda

    def ipc_buffer(self, x):
        """The id of a buffer over CuPy array / CUDA tensor x's memory (PUT /v1/buffers {"cuda_ipc"}, cached
        per allocation, offset, count and type): nothing is copied; x must stay allocated while it is
        used. Waits for the work queued on x's device first."""
        g = _GpuArray(x, _gpu_kind(x) or "cai", self._driver)
        if g.type is None or not g.count:
            raise ValueError("ipc_buffer takes a non-empty CUDA array of a warpd type")
        drv = self._driver()
        with drv.context(g.device):
            drv.synchronize()
            return self._ipc_buffer(g, drv)

    def ipc_release(self):
        """Deletes the cached CUDA IPC buffers (the daemon closes their handles): before freeing the
        memory to the driver (torch.cuda.empty_cache(), a CuPy pool's free_all_blocks())."""
        if self._res:
            self._res.drop_ipc()

    def _ipc_buffer(self, g, drv):
        res = self._resources()
        # The array's allocation by its unique id: seen before, its buffer is reused without asking the
        # driver for the handle again (cuIpcGetMemHandle and cuMemGetAddressRange cost more than the rest)
        seen = (drv.allocation_id(g.ptr), g.device, g.ptr, g.count, g.type)
        with res.lock:
            key = res.ipc_seen.get(seen)
            bid = res.ipc.get(key) if key is not None else None
            if bid is not None:
                res.ipc.move_to_end(key)
                return bid
        spec = _ipc_spec(drv, g)
        key = (spec["handle"], g.device, spec["offset"], g.count, g.type)
        with res.lock:
            res.ipc_seen[seen] = key
            while len(res.ipc_seen) > 4 * IPC_CACHE_MAX:
                res.ipc_seen.pop(next(iter(res.ipc_seen)))
            bid = res.ipc.get(key)
            if bid is not None:
                res.ipc.move_to_end(key)
                return bid
        bid = self._json("PUT", "/v1/buffers", {"type": g.type, "cuda_ipc": spec})["id"]  # the types agree
        drop = []
        with res.lock:
            if key in res.ipc:  # another thread made one meanwhile
                drop.append(bid)
                bid = res.ipc[key]
            else:
                res.ipc[key] = bid
                while len(res.ipc) > IPC_CACHE_MAX:
                    drop.append(res.ipc.popitem(last=False)[1])
        for d in drop:
            res.delete_buffer(d)
        return bid

    def _ipc_forget(self, ids):
        res = self._res
        if res:
            with res.lock:
                for k in [k for k, v in res.ipc.items() if v in ids]:
                    del res.ipc[k]

    def _gpu_job(self, path, x, kind, type, op, t, extra, progress, scan=False, out=None):
        g = _GpuArray(x, kind, self._driver)
        ipc_ok = g.type is not None and type in (None, g.type) and g.count > 0
        if ipc_ok and g.ptr % IPC_ALIGN:  # a slice at an odd offset: an aligned copy on the device (IPC_ALIGN)
            if g.kind == "cai":
                ipc_ok = False
            else:
                g = _GpuArray(g.obj.clone() if g.kind == "torch" else g.obj.copy(), g.kind, self._driver)
        if t == "ipc" and not ipc_ok:
            raise ValueError("transport ipc takes a non-empty CUDA array of a warpd type, without type=")
        if t == "ipc" or (t == "auto" and ipc_ok and self.ipc_refused is None and self.is_local()):
            try:
                return self._ipc_job(path, g, op, extra, scan, out)
            except (WarpdError, CudaError) as e:
                if t == "ipc" or not self._ipc_fallback(e):
                    raise
        # a copy on the host, then as a numpy array (by a pooled region when large and local)
        host = self._gpu_host(g)
        ty = type or g.type
        if not scan:
            return self.reduce(host, type=ty, op=op, progress=progress, transport=t, **extra)
        got = self.scan(host, type=ty, op=op, progress=progress, transport=t, **extra)
        if ty == "bf16" and got.dtype == _np.float32:  # bf16 values without ml_dtypes: back to their bits
            got = _bf16_bits_array(got)
        res = g.from_bytes(got.tobytes())
        return res if out is None else _fill_gpu(g, out, res)

    def _ipc_fallback(self, e):
        """True when "auto" should copy to the host after e; remembers a daemon that takes no IPC."""
        if isinstance(e, CudaError):
            return True  # this allocation has no IPC handle (a VMM or stream-ordered pool), or no driver
        if e.code in _IPC_REFUSALS or _route_missing(e):
            self.ipc_refused = f"{e.status} {e.code}"
            return True
        return e.field.startswith("cuda_ipc")  # bad_handle, bad_device: this array only

    def _ipc_reduce_fast(self, x, op):
        """reduce(x, op) for a CUDA array already made an IPC buffer, once this thread keeps a plain-HTTP or
        Unix-socket connection: the array checked and synchronized as _ipc_job does, then the request (its
        bytes made once per buffer and op) sent through the client's doorbell channel (opened on first
        use; Client channel=), else on the connection, a 200 answer with a Content-Length read with no
        header table (the data plane's goal: a repeated IPC reduce, wall time <= kernel + 100 us; the general path
        costs 20-40 us more in Python, a socket 10-60 us more than a channel). Anything else — no kept
        connection, a transport other than auto or ipc, an array never sent, another status, a closed
        connection — returns None before or after the exchange (a reduce can run twice), and reduce
        takes the general path."""
        conn = getattr(self._tls, "conn", None)
        if conn is None or conn.sock is None or isinstance(conn, http.client.HTTPSConnection) or \
                self.transport not in ("auto", "ipc") or self.ipc_refused is not None or self._res is None or \
                not self.is_local():
            return None
        facts = _lean_facts(x)
        if facts is None or facts[2] is None or facts[0] % IPC_ALIGN:
            return None
        ptr, count, ty, device = facts
        res, drv = self._res, self._res.cuda
        if drv is None:
            return None
        try:  # the framework's writes to x are done before the daemon reads it; the allocation's unique id
            seen = (drv.sync_allocation(device, ptr), device, ptr, count, ty)
        except CudaError:
            return None  # the general path decides (a copy to the host, or the error)
        with res.lock:
            key = res.ipc_seen.get(seen)
            bid = res.ipc.get(key) if key is not None else None
            if bid is not None:
                res.ipc.move_to_end(key)
        if bid is None:
            return None
        host = getattr(conn, "warpd_host_line", None)
        if host is None:
            return None
        rkey = (self.base, self.token, conn.warpd_origin, host, bid, op)
        req, body = self._fast_req.get(rkey, (None, None))
        if req is None:
            url = self.base + "/v1/reduce"
            if not url.startswith(conn.warpd_origin):
                return None
            body = _JSON_ENCODER.encode({"op": op, "buffer": bid}).encode()
            auth = f"Authorization: Bearer {self.token}\r\n" if self.token else ""
            req = (f"POST {url[len(conn.warpd_origin):]} HTTP/1.1\r\n{host}\r\nAccept-Encoding: identity\r\n"
                   f"Content-Type: application/json\r\n{auth}Content-Length: {len(body)}\r\n\r\n").encode() + body
            if len(self._fast_req) >= 4 * IPC_CACHE_MAX:
                self._fast_req.clear()
            self._fast_req[rkey] = (req, body)
        ch = self._channel(res)
        if ch is not None:
            got = ch.call("/v1/reduce", body, self.spin_us, conn.timeout)
            if got is not None:
                if got[0] != 200 or got[2]:
                    return None  # the general path asks again by HTTP and raises the daemon's error
                self._count("ipc")
                return json.loads(got[1])
            if ch.dead:
                res.drop_channel()
        got = self._fast_exchange(conn, req)
        if got is None:
            return None
        self._count("ipc")
        return json.loads(got.decode("utf-8"))

    def _channel(self, res):
        """The client's doorbell channel, opened on first use (None: off, refused, or not for this machine)."""
        if not self.channel or not _channels_usable():
            return None
        ch = res.channel
        if ch is not None:
            return ch
        try:
            return res.open_channel()
        except OSError:  # no region could be made (a full /dev/shm): HTTP, and another try later
            with res.lock:
                res.channel_retry = time.monotonic() + CHANNEL_RETRY_S
            return None

    def _fast_exchange(self, conn, req):
        """One request on conn's socket: the answer's body when it is a 200 with a Content-Length and the
        connection stays open; else None, the connection dropped (an answer half read is never reused)."""
        sock = conn.sock
        try:
            sock.sendall(req)
            buf = _recv_head(sock, self.spin_us, conn.timeout)
            end = buf.index(b"\r\n\r\n")
            head = buf[:end]
            i = head.find(b"\r\nContent-Length:")
            if not head.startswith(b"HTTP/1.1 200 ") or i < 0 or b"\r\nConnection: close" in head:
                raise ValueError("not a plain 200")
            eol = head.find(b"\r\n", i + 2)
            n = int(head[i + 17:eol if eol >= 0 else len(head)])
            body = buf[end + 4:]
            while len(body) < n:
                got = sock.recv(max(65536, n - len(body)))
                if not got:
                    raise http.client.RemoteDisconnected("closed")
                body += got
            if len(body) != n:
                raise ValueError("more than the answer")
            return body
        except (OSError, ValueError, http.client.HTTPException):
            self._drop_connection()
            return None
        except BaseException:  # interrupted (Ctrl-C) mid-exchange: the connection holds half a request
            self._drop_connection()
            raise

    def _ipc_job(self, path, g, op, extra, scan, out):
        drv = self._driver()
        og = None  # a scan's output: out=, or a new array of the input's kind, as an IPC buffer too
        if scan and not self._ipc_no_output:
            og = _GpuArray(out, g.kind, self._driver) if out is not None else None
            if og is not None and (og.count, og.type, og.device) != (g.count, g.type, g.device):
                raise ValueError("out= must be an array of the input's size, type and device")
            if og is None or og.obj is not out or og.ptr % IPC_ALIGN:  # none, strided or misaligned: a new one
                o = g.empty_like()
                og = _GpuArray(o, g.kind, self._driver) if o is not None else None
        remade = False
        while True:
            with drv.context(g.device):
                drv.synchronize()  # the framework's writes to g are done before the daemon reads it
                bid = self._ipc_buffer(g, drv)
                obid = self._ipc_buffer(og, drv) if og is not None else None
            body = {"op": op, "buffer": bid, **{k: v for k, v in extra.items() if v is not None}}
            if obid:
                body["output"] = {"buffer": obid}
            try:
                if scan and obid is None:  # the scan comes back as bytes, made an array of g's kind here
                    payload = self.request("POST", path, body, accept="application/octet-stream")[2]
                    self._count("ipc")
                    got = g.from_bytes(payload)
                    return got if out is None else _fill_gpu(g, out, got)
                answer = self._json("POST", path, body)
                self._count("ipc")
                if not scan:
                    return answer
                return og.obj if out is None or og.obj is out else _fill_gpu(g, out, og.obj)
            except WarpdError as e:
                if obid and e.status == 400 and e.field.split(".")[0] == "output":
                    self._ipc_no_output, og = True, None  # a daemon that writes no output buffer
                    continue
                if remade or e.code != "unknown_buffer":
                    raise
                remade = True  # expired (--buffer-ttl) or deleted: made again, once
                self._ipc_forget({bid, obid})

    def _gpu_host(self, g):
        """A flat numpy copy of GPU array g (bf16: its bits as uint16)."""
        if _np is None:
            raise RuntimeError("copying a CUDA array to the host needs numpy")
        if g.kind == "torch":
            t = g.obj.detach()
            if g.type == "bf16":
                import torch
                return t.view(torch.int16).cpu().numpy().reshape(-1).view(_np.uint16)
            return t.cpu().numpy().reshape(-1)
        if g.kind == "cupy":
            return g.obj.get().reshape(-1)
        dt = _np.dtype(g.obj.__cuda_array_interface__["typestr"])
        host = _np.empty(g.count, dtype=dt)
        if g.count:
            drv = self._driver()
            with drv.context(g.device):
                drv.synchronize()
                drv.copy_to_host(host.ctypes.data, g.ptr, g.nbytes)
        return host
