#!/usr/bin/env python3
"""make_corpus.py — the seed corpora of the libFuzzer harnesses (tests/fuzz/corpus/<harness>/), from the
request bodies of the API cases (tests/api/cases/*.json, valid and invalid alike) plus a few hand-made
inputs. Files are named by the SHA-1 of their bytes, as libFuzzer names what it finds; running it again
adds what is new and removes nothing.  tests/fuzz/make_corpus.py"""
import glob, hashlib, json, os, re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
OUT = os.path.join(ROOT, 'tests', 'fuzz', 'corpus')
MAX = 4096    # bytes of one seed (run.sh's -max_len)
PER = 60      # seeds per harness from the cases, at most

def body_of(case):
    if 'body' in case:
        b = case['body']
        return (b if isinstance(b, str) else json.dumps(b, separators=(',', ':'))).encode()
    if 'body_text' in case:
        return case['body_text'].encode()
    return None

def requests(method, path_re):
    out = []
    for f in sorted(glob.glob(os.path.join(ROOT, 'tests', 'api', 'cases', '*.json'))):
        for c in json.load(open(f)):
            if c.get('method') != method or not re.fullmatch(path_re, c.get('path', '')):
                continue
            ct = c.get('headers', {}).get('Content-Type', 'application/json')
            b = body_of(c)
            if b is not None and 'octet-stream' not in ct and len(b) <= MAX:
                out.append(b)
    seen, uniq = set(), []
    for b in out:
        if b not in seen:
            seen.add(b)
            uniq.append(b)
    return uniq[:PER]

def write(harness, seeds):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    for s in seeds:
        with open(os.path.join(d, hashlib.sha1(s).hexdigest()), 'wb') as f:
            f.write(s)
    print(f'{harness}: {len(seeds)} seeds')

warp = requests('POST', r'/v1/warp')
reduce = requests('POST', r'/v1/reduce(\?.*)?')
scan = requests('POST', r'/v1/scan(\?.*)?')
write('warp', warp)
# device_reduce's statistics and norms: every op, ddof right and wrong, the cases' own first
stats_cases = json.load(open(os.path.join(ROOT, 'tests', 'api', 'cases', 'stats.json')))
stats = [json.dumps(c['body'], separators=(',', ':')).encode() for c in stats_cases if c.get('method') == 'POST']
stats += [b'{"op":"var","ddof":1,"generate":{"kind":"random","n":5000,"seed":2}}',
          b'{"type":"f16","op":"std","ddof":0,"data":[1,"NaN",-0,65504]}',
          b'{"type":"u64","op":"norm2","data_b64":"//////////8BAAAAAAAAAA=="}',
          b'{"type":"f64","op":"norminf","strategy":"smem","data":["Infinity",-1e308]}',
          b'{"op":"count_nonzero","ddof":1,"data":[0]}', b'{"op":"var","ddof":"x","data":[1,2]}',
          b'{"op":"mean","family":"segmented_reduce","data":[1],"offsets":[0,1]}']
write('reduce', reduce + [b's' + b for b in scan] + stats)
# reduce_by_key: keys in each form (hand-made: the cases' first PER bodies came before it)
BYKEY = [
    {"family": "reduce_by_key", "type": "f32", "op": "sum", "data": [1, 2, 3, 4, 5, 6], "keys": {"type": "i32", "data": [1, 1, 2, 2, 2, 1]}},
    {"family": "reduce_by_key", "type": "i64", "op": "max", "data": [1, -2, 3, "-9007199254740993"], "keys": {"type": "u64", "data": ["18446744073709551615", 2, 2, 1]}},
    {"family": "reduce_by_key", "type": "f16", "op": "a - b", "data": [0.5, 0.25, 2], "keys": {"type": "i32", "data_b64": "AAAAAAAAAAABAAAA"}, "output": "b64"},
    {"family": "reduce_by_key", "type": "i32", "op": "sum", "generate": {"kind": "random", "n": 5000, "seed": 3}, "keys": {"type": "i32", "data": [1]}, "output": "buffer"},
    {"family": "reduce_by_key", "type": "f32", "data": [1, 2], "keys": {"buffer": "b-0000000000000000", "type": "i64"}},
    {"family": "reduce_by_key", "type": "f32", "data": [], "keys": {"type": "i32", "data": []}, "block": 32},
]
write('reduce', [json.dumps(s, separators=(',', ':')).encode() for s in BYKEY])
write('compile', requests('POST', r'/v1/compile') + warp[:10])
write('buffers', requests('PUT', r'/v1/buffers'))
write('jobs', requests('POST', r'/v1/jobs'))

# the fast data reader: a type byte (0..) and a list or a whole body
lists = []
for b in reduce[:30]:
    try:
        o = json.loads(b)
    except ValueError:
        continue
    if isinstance(o, dict) and isinstance(o.get('data'), list):
        lists.append(json.dumps(o['data']).encode())
    lists.append(b)
write('data', [bytes([i % 10]) + l for i, l in enumerate(lists)] +
      [b'\x00[1, 2.5e3, -0, "NaN", "Infinity"]', b'\x05["-9223372036854775808", 7]', b'\x02{"type":"u8","data":[1,2]}'])

write('base64', [b'', b'AQAAAP7///8=', b'AQAAAP7///8', b'////', b'YWJj\nZA==', b'=', b'A==='])
write('expr', [b'sum', b'a+b*2', b' a + ( b * 2 ) ', b'max(a,b)', b'min(a, b) ^ 3', b'a*b', b'xor', b'(a|b)&0xff',
               b'a<b?a:b', b'fminf(a,b)'])
# URL harness: a selector byte (fuzz_url.c's table), the rest of the path or query, then \n and a raw body
write('url', [b'\x00b-123', b'\x01nope', b'\x02j-1', b'\x03j-1/x', b'\x04state=done', b'\x04state=bogus',
              b'\x05type=f32&ttl=60\n' + bytes(16), b'\x05type=u8&backend=emu\nabc', b'\x06type=f32&op=sum\n' + bytes(16),
              b'\x06type=i32&op=max&output=b64\n' + bytes(8), b'\x06type=f32&op=var&ddof=1\n' + bytes(16),
              b'\x06type=f64&op=norm2&ddof=2\n' + bytes(16), b'\x07type=i32&op=sum&exclusive=true\n' + bytes(12),
              b'\x08data=raw', b'\x08data=1', b'\x08data=b64', b'\x08data=json&x=%00'])

# histogram: bins and range, valid and not, JSON and a raw body's query (the url harness)
hist = [{"family": "histogram", "type": t, "bins": b, "range": r, "data": d}
        for t, b, r, d in [("f32", 4, [0, 1], [0, 0.25, 1, 1.5, "nan"]), ("f16", 7, [-2.5, -0.5], [-1, -2.5]),
                           ("i64", 3, [-10, 10], [-10, 0, 10, "9223372036854775807"]), ("f32", 0, [0, 1], [1]),
                           ("f32", 3, [1, 1], [1]), ("f32", 3, [0, 1e-44], [0]), ("f32", 20000, [0, 1], [0.5]),
                           ("f64", 5, [0, 1e308], [1e300]), ("f32", 2, "0,1", [0.5]), ("bf16", 256, [0, 1], [])]]
hist.append({"family": "histogram", "type": "f32", "bins": 16, "range": [0, 1], "strategy": "atomic",
             "generate": {"kind": "random", "n": 1000, "seed": 1}, "check": True})
write('reduce', [json.dumps(h, separators=(',', ':')).encode() for h in hist])
write('url', [b'\x06family=histogram&type=f32&bins=4&range=0,1\n' + bytes(16),
              b'\x06family=histogram&type=f32&bins=4&range=1\n' + bytes(8)])
