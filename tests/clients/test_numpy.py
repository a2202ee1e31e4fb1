#!/usr/bin/env python3
"""Tests of clients/python/warpd with numpy arrays, against a live daemon ($WARPD_URL, set by
tests/clients/python.sh). WARPD_EXPECT_NUMPY=1: numpy must be importable, and reduce/scan/buffer_put take
arrays (raw bodies from the array's memory, the type from the dtype) and scan returns one. =0 (numpy
hidden): the client must not have it, and lists, bytes and a non-numpy object behave as before.
Expected values come from numpy or from formulas here, never from the daemon."""
import os
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
import warpd  # noqa: E402
from warpd import Client, WarpdError  # noqa: E402

URL = os.environ.get("WARPD_URL", "http://127.0.0.1:8080")
EXPECT_NUMPY = os.environ.get("WARPD_EXPECT_NUMPY", "1") == "1"


class Version(unittest.TestCase):
    def test_version_is_the_daemons(self):
        with open(os.path.join(ROOT, "server", "engine", "app.h")) as f:
            line = next(x for x in f if x.startswith("#define WP_VERSION"))
        self.assertEqual(warpd.__version__, line.split('"')[1])
        self.assertEqual(Client(URL).info()["version"], warpd.__version__)


if not EXPECT_NUMPY:

    class WithoutNumpy(unittest.TestCase):
        def test_numpy_is_hidden(self):
            with self.assertRaises(ImportError):
                import numpy  # noqa: F401
            self.assertIsNone(warpd._np)

        def test_lists_bytes_and_buffers_as_before(self):
            c = Client(URL)
            self.assertEqual(c.reduce([1, 2, 3.5])["value"], 6.5)  # type defaults to f32, as before
            self.assertEqual(c.reduce(raw=warpd.pack([5, 9, 2], "i32"), type="i32", op="max")["value"], 9)
            self.assertEqual(c.scan([1, 2, 3], type="i32")["data"], [1, 3, 6])
            self.assertEqual(warpd.unpack(c.scan([1, 2, 3], type="i32", raw_out=True), "i32"), [1, 3, 6])
            b = c.buffer_put(memoryview(warpd.pack([4, 5], "u32")), "u32")
            self.assertEqual(c.reduce(buffer=b["id"], op="sum")["value"], 9)
            with self.assertRaises(ValueError):
                c.buffer_put(b"\0\0\0\0")  # bytes need a type

        def test_array_module_arrays_are_bytes_like(self):
            import array
            a = array.array("f", [1.5, 2.5])  # bytes-like, not numpy: sent raw as before
            self.assertEqual(Client(URL).reduce(raw=memoryview(a), type="f32")["value"], 4.0)

else:
    import numpy as np

    DTYPES = [("int32", "i32"), ("uint32", "u32"), ("int64", "i64"), ("uint64", "u64"), ("float32", "f32"),
              ("float64", "f64"), ("float16", "f16")]

    def as_number(v):
        return float(v) if not isinstance(v, str) else float(int(v)) if v.lstrip("-").isdigit() else float(v)

    class WithNumpy(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            cls.c = Client(URL)

        def test_dtype_to_type(self):
            for name, t in DTYPES:
                view, got = warpd.array_bytes(np.zeros(3, dtype=name))
                self.assertEqual(got, t, name)
                self.assertEqual(len(view), 3 * warpd.ELEM_SIZE[t])
            for bad in ("complex64", "bool", "int8"):
                with self.assertRaises(ValueError) as e:
                    warpd.array_bytes(np.zeros(2, dtype=bad))
                self.assertIn(bad, str(e.exception))

        def test_map_and_dot_of_arrays(self):
            rng = np.random.default_rng(21)
            a = rng.integers(-50, 50, size=3000).astype(np.int32)
            b = rng.integers(-50, 50, size=3000).astype(np.int32)
            self.assertEqual(int(self.c.dot(a, b)), int(np.dot(a.astype(np.int64), b.astype(np.int64))))
            self.assertEqual(int(self.c.reduce(a, map="x*x")["value"]), int((a.astype(np.int64) ** 2).sum()))
            self.assertEqual(int(self.c.reduce(a, op="max", map="abs(x)")["value"]), int(np.abs(a).max()))
            got = self.c.scan(a[:100], map="x*y", data2=b[:100])
            np.testing.assert_array_equal(got, np.cumsum(a[:100] * b[:100], dtype=np.int32))
            f = rng.random(1000).astype(np.float32)
            self.assertAlmostEqual(float(self.c.dot(f, f)), float(np.dot(f.astype(np.float64), f)), delta=1e-3)

        def test_dot_of_a_list_and_an_array(self):
            # The first input gives the type: a list is f32 unless type= says, a buffer its own, whatever
            # data2's dtype (float64 here, numpy's default, was sent as 8-byte elements: 400 on data2_b64).
            r = self.c.dot([1, 2, 3], np.array([1.5, 2.0, 3.0]), full=True)
            self.assertEqual((r["type"], float(r["value"])), ("f32", 14.5))
            self.assertEqual(float(self.c.dot([1, 2], np.array([3, 4], dtype=np.float32))), 11.0)  # as bytes
            r = self.c.dot([1, 2, 3], np.array([4, 5, 6]), type="i64", full=True)
            self.assertEqual((r["type"], int(r["value"])), ("i64", 32))
            f64 = self.c.buffer_put([1.0, 2.0], type="f64")["id"]
            r = self.c.reduce(buffer=f64, op="dot", data2=np.array([3, 4], dtype=np.int32))
            self.assertEqual((r["type"], float(r["value"])), ("f64", 11.0))
            i64 = self.c.buffer_put(["0", "0"], type="i64")["id"]
            big = np.array([2**60 + 1, 1], dtype=np.int64)  # exact past 2^53: sent as strings
            r = self.c.reduce(buffer=i64, map="x+y", data2=big)
            self.assertEqual((r["type"], int(r["value"])), ("i64", 2**60 + 2))

        def test_reduce_every_dtype(self):
            rng = np.random.default_rng(5)
            for name, t in DTYPES:
                a = rng.integers(0, 100, size=1000).astype(name)
                r = self.c.reduce(a, op="max")
                self.assertEqual(r["type"], t, name)
                self.assertEqual(r["count"], 1000)
                self.assertEqual(as_number(r["value"]), float(a.max()), name)
                s = a[:100] % 10  # a sum under 1024: exact in every type, f16 included
                r = self.c.reduce(s, op="sum")
                self.assertEqual(as_number(r["value"]), float(s.astype(np.float64).sum()), name)

        def test_same_value_as_a_list(self):
            a = np.random.default_rng(1).standard_normal(4097).astype(np.float32)
            by_array = self.c.reduce(a, op="sum")
            by_list = self.c.reduce([float(x) for x in a], type="f32", op="sum")
            self.assertEqual(by_array["value"], by_list["value"])
            self.assertEqual(by_array["key"], by_list["key"])

        def test_sent_raw_from_the_arrays_memory(self):
            a = np.arange(300000, dtype=np.float32)
            seen = {}
            real_send = self.c._send

            def spy(method, url, data, headers):
                seen["ctype"], seen["url"] = headers.get("Content-Type"), url
                chunks = []
                while True:
                    chunk = data.read(1 << 20)
                    if not len(chunk):
                        break
                    chunks.append(chunk)
                seen["shares"] = all(isinstance(ch, memoryview) and np.shares_memory(np.frombuffer(ch, np.uint8), a)
                                     for ch in chunks)
                seen["bytes"] = sum(len(ch) for ch in chunks)
                return real_send(method, url, b"".join(chunks), headers)

            self.c._send = spy
            try:
                r = self.c.reduce(a, op="max", transport="http")  # a region would carry it otherwise
            finally:
                del self.c._send
            self.assertEqual(seen["ctype"], "application/octet-stream")
            self.assertIn("type=f32", seen["url"])
            self.assertTrue(seen["shares"], "the body was copied out of the array")
            self.assertEqual(seen["bytes"], a.nbytes)
            self.assertEqual(r["value"], 299999)

        def test_non_contiguous_big_endian_and_2d(self):
            a = np.arange(100, dtype=np.int64)
            self.assertEqual(int(self.c.reduce(a[::3], op="sum")["value"]), int(a[::3].sum()))
            b = np.arange(10, dtype=">f4")  # big-endian: converted to little
            self.assertEqual(self.c.reduce(b, op="max")["value"], 9)
            m = np.arange(12, dtype=np.int32).reshape(3, 4).T  # Fortran-ordered view, flattened in C order
            self.assertEqual(self.c.scan(m, op="max")[-1], 11)
            self.assertEqual(list(self.c.scan(m, op="sum")), list(np.cumsum(m.reshape(-1))))

        def test_explicit_type_converts(self):
            a = np.array([0.5, 1.25, 2.0])  # float64
            r = self.c.reduce(a, type="f32", op="sum")
            self.assertEqual((r["type"], r["value"]), ("f32", 3.75))
            r = self.c.reduce(np.array([1.0, 2.0, 3.5], dtype=np.float32), type="bf16", op="sum")
            self.assertEqual((r["type"], as_number(r["value"])), ("bf16", 6.5))

        def test_scan_returns_an_array(self):
            a = np.array([3, 1, 4, 1, 5], dtype=np.int32)
            out = self.c.scan(a, op="sum")
            self.assertIsInstance(out, np.ndarray)
            self.assertEqual(out.dtype, np.int32)
            self.assertEqual(out.tolist(), [3, 4, 8, 9, 14])
            self.assertTrue(out.flags.writeable)
            self.assertEqual(self.c.scan(a, op="sum", exclusive=True).tolist(), [0, 3, 4, 8, 9])
            h = self.c.scan(np.array([0.5, 0.25, 1.0], dtype=np.float16), op="sum")
            self.assertEqual((h.dtype, h.tolist()), (np.float16, [0.5, 0.75, 1.75]))
            u = self.c.scan(np.array([2**40, 2**40], dtype=np.uint64), op="sum")
            self.assertEqual((u.dtype, u.tolist()), (np.uint64, [2**40, 2**41]))
            self.assertIsInstance(self.c.scan(a, op="sum", raw_out=True), bytes)  # raw_out still gives bytes

        def test_reduce_by_key_arrays(self):
            keys = np.repeat(np.array([7, 3, 7, -1], dtype=np.int64), [2, 1000, 3, 1])
            vals = np.arange(keys.size, dtype=np.float32) * np.float32(0.5)
            rk, rv = self.c.reduce_by_key(keys, vals, op="sum")
            self.assertEqual((rk.dtype, rk.tolist()), (np.int64, [7, 3, 7, -1]))
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            want = np.add.reduceat(vals.astype(np.float64), starts)  # halves: exact in f32 and f64
            self.assertEqual((rv.dtype, rv.tolist()), (np.float32, want.tolist()))
            mk, mv = self.c.reduce_by_key(np.array([1, 1, 2], dtype=np.uint32), np.array([4, 9, 2], dtype=np.int16)
                                          .astype(np.int32), op="max")
            self.assertEqual((mk.tolist(), mv.tolist()), ([1, 2], [9, 2]))
            with self.assertRaises(WarpdError) as e:
                self.c.reduce_by_key(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
            self.assertEqual((e.exception.status, e.exception.field), (400, "keys.type"))

        def test_json_fields_fall_back_to_b64(self):
            a = np.array([1, 2, 3, 4, 5, 6], dtype=np.int32)
            r = self.c.reduce(a, family="segmented_reduce", op="sum", offsets=[0, 2, 6])
            self.assertEqual((r["data"].dtype, r["data"].tolist()), (np.int32, [3, 18]))  # from data_b64

        def test_buffers(self):
            a = np.linspace(-1, 1, 1001, dtype=np.float64)
            b = self.c.buffer_put(a)
            info = self.c.buffer(b["id"])
            self.assertEqual((info["type"], info["count"]), ("f64", 1001))
            self.assertEqual(self.c.reduce(buffer=b["id"], op="max")["value"], 1.0)
            c = self.c.buffer_put(np.arange(5, dtype=np.float32), type="i32")  # converted
            self.assertEqual(self.c.buffer(c["id"])["type"], "i32")
            self.assertEqual(self.c.reduce(buffer=c["id"], op="sum")["value"], 10)
            for bid in (b["id"], c["id"]):
                self.c.buffer_delete(bid)

        def test_stats_within_the_stated_bound_of_numpy(self):
            # docs/api.md: an f32 answer within 2^-22 relative of the exact value; naive f32 sums fail here
            rng = np.random.default_rng(21)
            a = (1e4 + rng.standard_normal(50001)).astype(np.float32)
            x = a.astype(np.float64)
            for op, kw, ref in (("mean", {}, x.mean()), ("var", {"ddof": 1}, x.var(ddof=1)), ("std", {}, x.std()),
                                ("norm1", {}, np.abs(x).sum()), ("norm2", {}, np.linalg.norm(x)),
                                ("norminf", {}, np.abs(x).max())):
                r = self.c.reduce(a, op=op, **kw)
                self.assertEqual(r["value_type"], "f32", op)
                self.assertLessEqual(abs(as_number(r["value"]) - ref), 2.0**-22 * abs(ref), op)
            d = a - np.float32(1e4)
            self.assertEqual(int(self.c.reduce(d, op="count_nonzero")["value"]), int(np.count_nonzero(d)))

        def test_pack_and_to_array(self):
            a = np.array([1.5, -2.0], dtype=np.float32)
            self.assertEqual(warpd.pack(a, "f32"), warpd.pack([1.5, -2.0], "f32"))
            self.assertEqual(warpd.to_array(warpd.pack([7, 8], "u64"), "u64").tolist(), [7, 8])
            empty = self.c.reduce(np.zeros(0, dtype=np.float32))  # as an empty list
            self.assertEqual((empty["count"], empty["value"]), (0, self.c.reduce([], type="f32")["value"]))
            with self.assertRaises(WarpdError) as e:  # the daemon's own errors come through
                self.c.reduce(np.zeros(3, dtype=np.float32), op="xor")
            self.assertEqual(e.exception.status, 400)


if __name__ == "__main__":
    unittest.main()
