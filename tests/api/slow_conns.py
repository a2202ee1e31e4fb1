#!/usr/bin/env python3
"""slow_conns.py — connection exhaustion against a running warpd (slow and idle connections). Standard library only.

    slow_conns.py check URL N [--pid PID]   the test: N slow connections (a partial request, then a header
                                            byte every 2 s); GET /v1/health from a fresh connection must
                                            answer while they are open, and again after they close
    slow_conns.py deadline URL N S          the test of the header deadline: N slow connections are closed
                                            by the server about S seconds after they opened
    slow_conns.py perip URL N LIMIT         a daemon listening beyond loopback lets one peer address hold
                                            LIMIT connections; the rest of N are closed at once
    slow_conns.py bench URL N [--pid PID]   the same as check, printing numbers (health latency under the
                                            load, time until reachable after the close, the daemon's fds)

URL is http://127.0.0.1:PORT. Bounds are generous on purpose (10 s, 30 s): the test asserts that the
daemon answers at all, never how fast; bench/ prints the milliseconds. Ends with "slow_conns: N passed,
N failed" (check, deadline)."""
import errno
import os
import resource
import socket
import sys
import threading
import time
import urllib.parse

ANSWER_S = 10.0  # the daemon answers within this, or the check fails (a bound, not a measurement)
TRICKLE_S = 2.0  # a header byte per connection this often
SETTLE_S = 30.0  # at most this for the slow connections to be in (a wait on their state, not a sleep)
PARTIAL = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return min(want, max(16, soft - 64))


def addr_of(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port


def health(addr, timeout=ANSWER_S):
    """GET /v1/health on a fresh connection: (status or None, seconds, why)."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(addr, timeout=timeout) as s:
            s.settimeout(max(0.1, timeout - (time.monotonic() - t0)))
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        line = data.split(b"\r\n", 1)[0].split()
        status = int(line[1]) if len(line) >= 2 and line[1].isdigit() else None
        return status, time.monotonic() - t0, f"answered {data[:40]!r}"
    except OSError as e:
        return None, time.monotonic() - t0, f"{type(e).__name__}: {e}"


class Slow:
    """N connections that send a partial request line and headers, then a byte every TRICKLE_S."""

    def __init__(self, addr, n):
        self.socks, self.sent, self.stop = [], [], threading.Event()
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex(addr)
            self.socks.append(s)
            self.sent.append(0)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _send(self):
        for i, s in enumerate(self.socks):
            if s is None:
                continue
            data = PARTIAL[self.sent[i]:] if self.sent[i] < len(PARTIAL) else b"a"
            try:
                self.sent[i] += s.send(data)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                if e.errno not in (errno.ENOTCONN, errno.EAGAIN):
                    pass  # closed by the server: keep the socket (its fd) until close_all

    def _run(self):
        while not self.stop.is_set():
            self._send()
            self.stop.wait(TRICKLE_S)

    @staticmethod
    def _closed(s):
        """The server has closed s (EOF or reset on a peek)."""
        try:
            return s.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def closed_by_server(self):
        """How many of the connections the server has closed."""
        return sum(self._closed(s) for s in self.socks)

    def settled(self):
        """Every connection has sent its partial request, or the server has closed it."""
        return all(sent >= len(PARTIAL) or self._closed(s) for s, sent in zip(self.socks, self.sent))

    def close_all(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def wait_for(cond, deadline_s=SETTLE_S):
    """Polls cond() until it holds or deadline_s passes (suites run side by side: no fixed sleep)."""
    t0 = time.monotonic()
    while not cond() and time.monotonic() - t0 < deadline_s:
        time.sleep(0.05)


def fds_of(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def reachable_after(addr, deadline_s):
    """Seconds until a fresh GET /v1/health answers 200, or None within deadline_s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        status, _, _ = health(addr, timeout=min(1.0, deadline_s))
        if status == 200:
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def metric(addr, name):
    """A value of GET /metrics ("name" or 'name{label="x"}'), or None."""
    try:
        with socket.create_connection(addr, timeout=ANSWER_S) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return None
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("check", "deadline", "perip", "bench"):
        print(__doc__)
        return 2
    mode, addr = sys.argv[1], addr_of(sys.argv[2])
    n = raise_nofile(int(sys.argv[3]))
    pid = int(sys.argv[sys.argv.index("--pid") + 1]) if "--pid" in sys.argv else None
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    if mode == "perip":  # the daemon listens beyond loopback: one peer address gets at most `limit`
        limit = int(sys.argv[4])
        slow = Slow(addr, n)
        wait_for(lambda: slow.settled() and slow.closed_by_server() >= n - limit)
        closed = slow.closed_by_server()
        check(closed == n - limit, f"{n} connections from one address: {closed} refused (limit {limit})")
        slow.close_all()
        back = reachable_after(addr, 30.0)
        check(back is not None, "GET /v1/health once they closed: " + ("answered" if back is not None else "no answer"))
        print(f"slow_conns: {passed} passed, {failed} failed")
        return 1 if failed else 0

    if mode == "deadline":
        secs = float(sys.argv[4])
        keep = socket.create_connection(addr, timeout=ANSWER_S)  # a keep-alive client, idle in between
        keep_req = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        keep.sendall(keep_req)
        first = keep.recv(4096)
        slow = Slow(addr, n)
        t0 = time.monotonic()
        while slow.closed_by_server() < n and time.monotonic() - t0 < secs + 30:
            time.sleep(0.2)
        closed, took = slow.closed_by_server(), time.monotonic() - t0
        check(closed == n, f"{closed} of {n} slow connections closed by the server (after {took:.1f} s; "
              f"header timeout {secs:g} s)")
        check(took >= secs * 0.5, f"not before the header timeout ({took:.1f} s >= {secs * 0.5:g} s)")
        closed = metric(addr, 'warpd_http_connections_closed_total{reason="header_timeout"}')
        check(closed == n, f"/metrics counts them: header_timeout {closed}")
        status, _, why = health(addr)
        check(status == 200, f"GET /v1/health afterwards: {why}")
        try:  # the idle keep-alive connection outlived the header timeout: idle is not slow
            keep.sendall(keep_req)
            again = keep.recv(4096)
        except OSError as e:
            again = repr(e).encode()
        check(first.startswith(b"HTTP/1.1 200") and again.startswith(b"HTTP/1.1 200"),
              f"a keep-alive connection idle for {took:.1f} s still answered: {again[:30]!r}")
        keep.close()
        slow.close_all()
        print(f"slow_conns: {passed} passed, {failed} failed")
        return 1 if failed else 0

    fds0 = fds_of(pid) if pid else -1
    slow = Slow(addr, n)
    wait_for(slow.settled)
    if "--evicts" in sys.argv:  # the daemon has made room at least once
        wait_for(lambda: (metric(addr, 'warpd_http_connections_closed_total{reason="evicted"}') or 0) > 0)
    fds1 = fds_of(pid) if pid else -1
    lat = []
    for _ in range(20 if mode == "bench" else 3):
        status, secs, why = health(addr)
        lat.append(secs if status == 200 else float("inf"))
        if mode == "check":
            check(status == 200, f"GET /v1/health from a fresh connection with {n} slow ones open: {why}")
    slow.close_all()
    t_close = time.monotonic()
    back = reachable_after(addr, 30.0)
    time.sleep(max(0.0, 1.5 - (time.monotonic() - t_close)))
    fds2 = fds_of(pid) if pid else -1
    if mode == "check":
        check(back is not None, f"GET /v1/health after the {n} slow connections closed: "
              f"{'answered' if back is not None else 'no answer within 30 s'}")
        if "--evicts" in sys.argv:  # more slow connections than the limit: the oldest made room
            evicted = metric(addr, 'warpd_http_connections_closed_total{reason="evicted"}')
            check(evicted is not None and evicted > 0, f"/metrics: {evicted} evicted to make room")
        print(f"slow_conns: {passed} passed, {failed} failed")
        return 1 if failed else 0
    lat.sort()
    ms = lambda x: "timeout" if x == float("inf") else f"{x * 1e3:.1f} ms"  # noqa: E731
    print(f"{n} slow connections: GET /v1/health from a fresh connection p50 {ms(lat[len(lat) // 2])}, "
          f"max {ms(lat[-1])} ({len(lat)} requests)")
    print(f"after they close: reachable in {ms(back) if back is not None else 'no answer within 30 s'}")
    if pid:
        print(f"daemon fds: {fds0} before, {fds1} with the slow connections open, {fds2} 1.5 s after they closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
