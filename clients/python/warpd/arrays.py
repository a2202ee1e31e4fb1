"""arrays.py — data as the daemon takes it: lists packed into little-endian bytes and back (pack, unpack),
numpy arrays as raw bytes and back (array_bytes, to_array; numpy is optional), bf16 rounding, and the
copies into and out of shared-memory regions. Knows nothing of HTTP or of CUDA."""
import math
import os
import struct
import sys
import threading

ELEM_SIZE = {"i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8, "f16": 2, "bf16": 2}
_STRUCT = {"i32": "i", "u32": "I", "i64": "q", "u64": "Q", "f32": "f", "f64": "d", "f16": "e"}

try:  # optional: without numpy, lists, bytes and files work as before
    import numpy as _np
except ImportError:
    _np = None

# numpy dtype name → warpd type ("bfloat16" is ml_dtypes' dtype, when an array has it)
NUMPY_TYPES = {"int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64", "float32": "f32",
               "float64": "f64", "float16": "f16", "bfloat16": "bf16"}

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

def _native(dt):
    return dt.byteorder in ("=", "|") or (dt.byteorder == "<") == (sys.byteorder == "little")


def _typed(arr, type):
    """(src, type, count): arr itself when its dtype is the type's, native and little-endian (copied into a
    region by np.copyto, in any layout), else its converted little-endian bytes (array_bytes)."""
    have = NUMPY_TYPES.get(arr.dtype.name)
    if have is not None and type in (None, have) and _native(arr.dtype) and sys.byteorder == "little":
        return arr, have, arr.size
    view, type = array_bytes(arr, type)
    return view, type, len(view) // ELEM_SIZE[type]


PAR_COPY_MIN_BYTES = 64 << 20  # copies into and out of pooled regions this large run on several threads


def _copyto(dst, src):
    """np.copyto, on up to 8 threads (numpy lets go of the GIL) when both are C-contiguous and large: one
    thread copies about 10 GB/s, the memory bus takes 3x that (H200 host: 1 GiB in 99 ms, 30 on 8)."""
    k = min(8, os.cpu_count() or 1)
    if dst.nbytes < PAR_COPY_MIN_BYTES or k < 2 or not (dst.flags.c_contiguous and src.flags.c_contiguous):
        _np.copyto(dst, src)
        return
    d, s = dst.reshape(-1), src.reshape(-1)
    step = -(-d.size // k)
    ts = [threading.Thread(target=_np.copyto, args=(d[i:i + step], s[i:i + step])) for i in range(0, d.size, step)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def _copy_in(region, src, count):
    """src (from _typed) into the start of the region's mapping."""
    if _is_array(src):
        if count:
            dst = _np.frombuffer(region.mm, dtype=src.dtype, count=count)
            _copyto(dst.reshape(src.shape), src)
            del dst
    else:
        region.mm[0:len(src)] = src


def _fill_gpu(g, out, got):
    """Copies a scan's result (an array of g's kind) into the caller's out= array and returns out."""
    if g.kind == "torch":
        out.copy_(got.reshape(out.shape))
    else:
        out[...] = got.reshape(out.shape)
    return out


def _fill(out, got):
    """Copies a result into the caller's out= array (of its size) and returns out."""
    if out.size != got.size:
        raise ValueError(f"out= holds {out.size} elements; the result has {got.size}")
    _np.copyto(out, got.reshape(out.shape), casting="same_kind")
    return out
