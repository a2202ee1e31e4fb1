"""progress.py — upload and job progress: ProgressReader (a body that reports how much was sent) and
progress_bar (the CLI's bar on stderr)."""
import io
import os
import sys

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
