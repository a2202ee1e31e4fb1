"""wire.py — HTTP/1.1 on the client's sockets: a Unix-socket connection, and one request and its answer
written and read by hand on a kept plain-HTTP connection (exchange: http.client's parsing is most of a
small request's time in Python), or through http.client for TLS and streamed bodies."""
import http.client
import json
import socket
import time


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


_JSON_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # request bodies (made once)
_HEADER_NAMES = {}  # an answer's header names as received -> titled (exchange)


def _spin_recv(sock, spin_us, timeout):
    """What the socket has within spin_us, polled without sleeping (b"" when nothing came: the caller
    then sleeps in recv as usual); the socket's timeout is put back."""
    sock.settimeout(0.0)
    end = time.perf_counter() + spin_us * 1e-6
    try:
        while True:
            try:
                got = sock.recv(65536)
                if not got:
                    raise http.client.RemoteDisconnected("the server closed the connection without an answer")
                return got
            except (BlockingIOError, InterruptedError):
                if time.perf_counter() > end:
                    return b""
    finally:
        sock.settimeout(timeout)


def _recv_head(sock, spin_us, timeout):
    """An answer's bytes through the end of its head (the blank line), and what came after it: polled
    for spin_us first (_spin_recv), then read as they come."""
    buf = bytearray(_spin_recv(sock, spin_us, timeout) if spin_us > 0 else b"")
    while b"\r\n\r\n" not in buf:
        got = sock.recv(65536)
        if not got:
            raise http.client.RemoteDisconnected("the server closed the connection without an answer")
        buf += got
    return buf


def http_client_exchange(conn, method, target, data, headers, reused):
    try:
        conn.request(method, target, body=data, headers=headers)
    except (BrokenPipeError, ConnectionResetError):
        if reused:
            raise
        # The server may answer (404, 413, ...) and close before it has read a large body: its answer
        # is still in the socket, so read it rather than report a broken pipe.
    resp = conn.getresponse()
    payload = resp.read()
    return resp.status, {k.title(): v for k, v in resp.getheaders()}, payload, resp.will_close

def exchange(conn, method, target, data, headers, spin_us=0):
    """One request and its answer on conn's socket, written and read by hand: one sendall, then the
    status line, the headers and a Content-Length (or chunked) body. http.client's parsing is most of
    a small request's time in Python (a repeated CUDA IPC reduce, the data plane). Returns (status, headers,
    body, whether the server closes the connection)."""
    if conn.sock is None:
        conn.connect()
    host = getattr(conn, "warpd_host_line", None)
    if host is None:  # "Host: ..." once per connection
        name = conn.host if ":" not in conn.host else f"[{conn.host}]"
        host = conn.warpd_host_line = f"Host: {name}:{conn.port}" if conn.port else f"Host: {name}"
    head = f"{method} {target} HTTP/1.1\r\n{host}\r\nAccept-Encoding: identity\r\n"
    for k, v in headers.items():
        head += f"{k}: {v}\r\n"
    if data is not None or method in ("POST", "PUT"):
        head += f"Content-Length: {len(data) if data is not None else 0}\r\n"
    sock = conn.sock
    try:
        sock.sendall((head + "\r\n").encode("latin-1") + (bytes(data) if data else b""))
    except (BrokenPipeError, ConnectionResetError):
        pass  # an answer before the whole body (413, ...) may still be there: read it
    buf = _recv_head(sock, spin_us, conn.timeout)
    end = buf.index(b"\r\n\r\n")
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    body = buf[end + 4:]
    try:
        status = int(lines[0].split(" ", 2)[1])
    except (IndexError, ValueError):
        raise http.client.BadStatusLine(lines[0]) from None
    rheaders = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        t = _HEADER_NAMES.get(k)
        if t is None:  # a name not seen before: titled, and kept for next time (a few dozen at most)
            t = k.strip().title()
            if len(_HEADER_NAMES) < 256:
                _HEADER_NAMES[k] = t
        rheaders[t] = v.strip()
    closing = rheaders.get("Connection", "").lower() == "close"

    def more():
        got = sock.recv(1 << 20)
        if not got:
            raise http.client.IncompleteRead(bytes(body))
        return got

    if "chunked" in rheaders.get("Transfer-Encoding", "").lower():
        out, pos = bytearray(), 0
        while True:
            while b"\r\n" not in body[pos:]:
                body += more()
            eol = body.index(b"\r\n", pos)
            size = int(bytes(body[pos:eol]).split(b";")[0], 16)
            while len(body) < eol + 2 + size + 2:
                body += more()
            out += body[eol + 2:eol + 2 + size]
            pos = eol + 2 + size + 2
            if size == 0:
                break
        return status, rheaders, bytes(out), closing
    if "Content-Length" in rheaders:
        n = int(rheaders["Content-Length"])
        while len(body) < n:
            body += more()
        return status, rheaders, bytes(body[:n]), closing
    if method == "HEAD" or status in (204, 304):
        return status, rheaders, b"", closing
    while True:  # no length: the body runs to the connection's end
        got = sock.recv(1 << 20)
        if not got:
            return status, rheaders, bytes(body), True
        body += got
