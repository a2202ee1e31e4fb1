"""resources.py — what a Client holds and must give back: its regions (shared() arrays' and the pool's),
its cached CUDA IPC buffers, its doorbell channel and the CUDA driver (_Resources). Freed at close(), or
by a finalizer when a Client is dropped unclosed."""
import collections
import threading
import time
import urllib.parse

from .channel import CHANNEL_BYTES, CHANNEL_RETRY_S, CHANNEL_SPIN_US, _Channel
from .errors import _SHM_REFUSALS, WarpdError
from .shm import _Region, _ShmPool


class _Resources:
    """A client's regions (its shared() arrays' and the pool's), its cached CUDA IPC buffers and the CUDA
    driver. Holds `remote`, a plain Client for the requests that free them, never the Client itself, so
    that a finalizer of the Client (or of an array) can close them."""

    def __init__(self, remote, prefix, mode):
        self.remote, self.prefix, self.mode = remote, prefix, mode
        self.lock = threading.Lock()
        self.shared = ()  # the shared() arrays' regions: a tuple replaced under lock, read without it
        self.pool = _ShmPool(self.new_region)
        self.ipc = collections.OrderedDict()  # (handle b64, device, offset, count, type) → buffer id
        self.ipc_seen = {}  # (allocation id, device, address, count, type) → that key
        self.cuda = None  # _CudaDriver (tests put a stand-in here)
        self.channel = None  # _Channel: a doorbell for repeated small calls (Client._channel)
        self.channel_refused = None  # why the daemon gave none ("403 channels_disabled"), or None
        self.channel_retry = 0.0  # time.monotonic() before which no channel is asked for again

    def new_region(self, size):
        """A registered region of `size` bytes: the object made, mapped, then POST /v1/shm."""
        r = _Region(self.remote, self.prefix, size, self.mode)
        try:
            r.register()
        except BaseException:
            r.release()
            raise
        return r

    def add_shared(self, r):
        with self.lock:
            self.shared = tuple(x for x in self.shared if not x.dead) + (r,)

    def delete_buffer(self, bid):
        try:
            self.remote._json("DELETE", "/v1/buffers/" + urllib.parse.quote(bid, safe=""))
        except (WarpdError, OSError):
            pass

    def drop_ipc(self):
        with self.lock:
            ids, self.ipc = list(self.ipc.values()), collections.OrderedDict()
        for bid in ids:
            self.delete_buffer(bid)

    def open_channel(self):
        """A doorbell channel in a new region of CHANNEL_BYTES (made once; None when refused)."""
        with self.lock:
            if self.channel is not None or self.channel_refused is not None or time.monotonic() < self.channel_retry:
                return self.channel
        try:
            r = self.new_region(CHANNEL_BYTES)
        except WarpdError as e:
            self._channel_refused(e)
            return None
        try:
            info = self.remote._json("POST", "/v1/channels", {"shm": {"id": r.id}, "spin_us": CHANNEL_SPIN_US})
        except WarpdError as e:
            r.release()
            self._channel_refused(e)
            return None
        except BaseException:
            r.release()
            raise
        ch = _Channel(r, info, self.remote)
        with self.lock:
            if self.channel is None:
                self.channel, ch = ch, None
        if ch is not None:  # another thread's came first
            ch.close()
        return self.channel

    def _channel_refused(self, e):
        """A daemon that will never give one (403: off or not for this peer; 404/405: too old for channels)
        is not asked again; a full one (429, 413 shm_quota, 5xx) in CHANNEL_RETRY_S."""
        with self.lock:
            if e.status in (403, 404, 405) or (e.status == 400 and e.code in _SHM_REFUSALS):
                self.channel_refused = f"{e.status} {e.code}"
            else:
                self.channel_retry = time.monotonic() + CHANNEL_RETRY_S

    def drop_channel(self):
        with self.lock:
            ch, self.channel = self.channel, None
        if ch is not None:
            ch.close()

    def close(self):
        self.drop_channel()
        self.pool.close()
        with self.lock:
            regions, self.shared = self.shared, ()
        for r in regions:
            r.release()
        self.drop_ipc()
        with self.lock:
            cuda, self.cuda = self.cuda, None
        if cuda is not None and hasattr(cuda, "close"):
            cuda.close()
        self.remote._drop_connection()  # this thread's kept connection of the requests above
