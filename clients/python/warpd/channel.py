"""channel.py — doorbell channels (POST /v1/channels): a request and its answer pass through a small
shared-memory region of ours, the daemon woken and waited for with futexes, no socket. Owns _Channel,
_Futex and the channel's word layout (the daemon's engine/channels.h)."""
import ctypes
import functools
import sys
import threading
import time
import urllib.parse

from .errors import WarpdError

CHANNEL_BYTES = 1 << 16       # a doorbell channel's region (POST /v1/channels): 30 KiB requests and answers
CHANNEL_RETRY_S = 30.0        # a daemon that had no channel to give (429, quota) is asked again this much later
CHANNEL_SPIN_US = 1000        # the daemon's channel thread polls this long after each request before it sleeps

# A doorbell channel's words (the daemon's engine/channels.h has the layout): byte offsets in its region.
_CH_REQ_SEQ, _CH_REQ_ROUTE, _CH_TAKEN, _CH_DAEMON_SLEEPING = 64, 68, 128, 132
_CH_ANS_SEQ, _CH_ANS_STATUS, _CH_CLIENT_SLEEPING = 192, 196, 256  # ans_len 200, ans_octets 204 follow ans_status
_CH_ROUTES = {"/v1/reduce": 1, "/v1/scan": 2}
_CH_WORDS = 512  # the header's words a client reads and writes (a memoryview of 32-bit words over them: one
                 # store a word; struct.pack_into zeroes its bytes first, so another process could read 0)
_SYS_FUTEX = 202  # x86-64
_CH_GONE_S = 1.0  # a request the daemon has not taken after this long: the channel is gone


class _Futex:
    """FUTEX_WAIT / FUTEX_WAKE on a word of a shared mapping (non-private: the daemon is another process)."""
    _libc = None

    class _Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    @classmethod
    def _syscall(cls):
        if cls._libc is None:
            cls._libc = ctypes.CDLL(None, use_errno=True)
            cls._libc.syscall.restype = ctypes.c_long
        return cls._libc.syscall

    @classmethod
    def wake(cls, addr):  # every waiter, as the daemon wakes: a waiter of someone else's cannot take it
        cls._syscall()(ctypes.c_long(_SYS_FUTEX), ctypes.c_void_p(addr), ctypes.c_int(1), ctypes.c_int(0x7FFFFFFF),
                       None, None, ctypes.c_int(0))

    @classmethod
    def wait(cls, addr, val, seconds):
        ts = cls._Timespec(int(seconds), int((seconds % 1) * 1e9))
        cls._syscall()(ctypes.c_long(_SYS_FUTEX), ctypes.c_void_p(addr), ctypes.c_int(0), ctypes.c_uint(val),
                       ctypes.byref(ts), None, ctypes.c_int(0))


@functools.lru_cache(maxsize=None)  # asked on every lean call: once
def _channels_usable():
    """Doorbell channels need Linux futexes and a machine whose plain loads and stores are ordered as the
    daemon's atomics expect of this side (x86-64: a store is seen after the stores before it)."""
    import platform
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


class _Channel:
    """A doorbell channel (POST /v1/channels) in a region of ours: call() writes a request's JSON body into
    the region, bumps req_seq (waking the daemon's channel thread if it sleeps), and polls ans_seq for
    spin_us, then sleeps on it (futex) until the answer is there — no socket, no HTTP. One call at a time
    (call returns None when another thread holds it, the body is too large, or the channel is gone: the
    caller then goes by HTTP). close() deletes the channel and releases the region."""

    def __init__(self, region, info, remote):
        self.region, self.id, self.remote = region, info["id"], remote
        self.ttl_s, self.last = info["ttl_s"], time.monotonic()
        lay = info["layout"]
        self.req_off, self.req_max = lay["request_offset"], lay["request_bytes"]
        self.ans_off, self.ans_max = lay["answer_offset"], lay["answer_bytes"]
        self.mm, self.addr = region.mm, region.addr
        self.words = memoryview(region.mm)[:_CH_WORDS].cast("I")  # released at close(), before the mapping
        self.seq = self.words[_CH_REQ_SEQ >> 2]
        self.lock = threading.Lock()
        self.dead = False

    def _u32(self, off):
        return self.words[off >> 2]

    def call(self, path, body, spin_us, timeout):
        """(status, answer bytes, True when they are application/octet-stream rather than JSON), or None: not
        sent (busy, too large, gone) or not taken in time."""
        route = _CH_ROUTES.get(path)
        if route is None or len(body) > self.req_max or self.dead or not self.lock.acquire(blocking=False):
            return None
        try:
            if self.dead:  # closed while this thread waited for the lock: the mapping may be gone
                return None
            now = time.monotonic()
            if now - self.last > self.ttl_s / 2 and not self.alive():
                self.dead = True  # closed by the daemon after ttl_s idle, or the daemon restarted
                return None
            self.last = now
            mm, w, seq = self.mm, self.words, (self.seq + 1) & 0xFFFFFFFF
            mm[self.req_off:self.req_off + len(body)] = body
            w[_CH_REQ_ROUTE >> 2], w[(_CH_REQ_ROUTE >> 2) + 1] = route, len(body)  # req_route, req_len
            w[_CH_REQ_SEQ >> 2] = seq  # after the bytes (x86-64 keeps stores in order)
            self.seq = seq
            if self._u32(_CH_DAEMON_SLEEPING):
                _Futex.wake(self.addr + _CH_REQ_SEQ)
            if not self._wait(seq, spin_us, timeout):
                self.dead = True
                return None
            i = _CH_ANS_STATUS >> 2
            status, n, octets = w[i], w[i + 1], w[i + 2]  # ans_status, ans_len, ans_octets: 196, 200, 204
            return status, bytes(mm[self.ans_off:self.ans_off + min(n, self.ans_max)]), octets == 1
        finally:
            self.lock.release()

    def _wait(self, seq, spin_us, timeout):
        """Until ans_seq is seq: polled for spin_us, then slept on. False when the channel is gone (the daemon
        has not taken the request within _CH_GONE_S, or GET /v1/channels/{id} no longer answers: closed,
        expired, the daemon stopped); TimeoutError after timeout seconds."""
        u32, t0 = self._u32, time.perf_counter()
        end, rewoken, asked = t0 + spin_us * 1e-6, False, t0
        while u32(_CH_ANS_SEQ) != seq:
            now = time.perf_counter()
            if not rewoken and now - t0 > 0.001:
                # the bump and the look at daemon_sleeping are a store then a load, which the CPU may
                # reorder: a daemon that fell asleep just then has missed its wake; a second one costs little
                if u32(_CH_TAKEN) != seq:
                    _Futex.wake(self.addr + _CH_REQ_SEQ)
                rewoken = True
            if now < end:
                continue
            taken = u32(_CH_TAKEN) == seq
            if (not taken and now - t0 > _CH_GONE_S) or (now - asked > (0.05 if not taken else 1.0)):
                if (not taken and now - t0 > _CH_GONE_S) or not self.alive():
                    return False
                asked = time.perf_counter()
            if timeout is not None and now - t0 > timeout:
                self.dead = True
                raise TimeoutError(f"no answer on channel {self.id} within {timeout} s")
            self.words[_CH_CLIENT_SLEEPING >> 2] = 1
            v = u32(_CH_ANS_SEQ)  # the value the sleep compares: an answer after this read wakes it
            if v != seq:
                _Futex.wait(self.addr + _CH_ANS_SEQ, v, 0.05)
            self.words[_CH_CLIENT_SLEEPING >> 2] = 0
        return True

    def alive(self):
        """GET /v1/channels/{id} answers 200."""
        try:
            self.remote._json("GET", "/v1/channels/" + urllib.parse.quote(self.id, safe=""))
            return True
        except (WarpdError, OSError):
            return False

    def close(self):
        with self.lock:  # a call in flight on another thread ends first: the mapping goes below
            self.dead = True
            self.words.release()
        try:
            self.remote._json("DELETE", "/v1/channels/" + urllib.parse.quote(self.id, safe=""))
        except (WarpdError, OSError):
            pass
        self.region.release()
