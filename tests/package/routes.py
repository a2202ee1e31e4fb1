#!/usr/bin/env python3
"""routes.py BASE_URL — one curl per route of a running warpd, the routes taken from the daemon's own
GET /v1/openapi.json (so a route added later is covered without editing this file). For each
operation, in document order (put, post, get, delete within a path), it sends the operation's first
documented example (a request body, else a parameter's, else a bare request) and expects the
example's x-status, else the operation's first documented 2xx; a JSON answer must parse. An example
that names an earlier one ("{{buffer-f32.id}}", in its value or, for a parameter whose pattern the
name would break, its x-value) gets that one sent first if it was not. Prints one
line per request and ends with "routes: N passed, N failed". Standard library and curl only."""
import json
import re
import subprocess
import sys
import tempfile
import urllib.parse

base = sys.argv[1].rstrip("/")
doc = json.loads(subprocess.run(["curl", "-sS", "--max-time", "30", base + "/v1/openapi.json"],
                                check=True, capture_output=True).stdout)
METHODS = ("put", "post", "get", "delete")
REF = re.compile(r"^\{\{([^.}]+)\.([^}]+)\}\}$")
saved, passed, failed = {}, 0, 0
examples = {}  # name -> (path, method, op, example, body content type or None, parameter or None)
for path, ops in doc["paths"].items():
    for m in METHODS:
        op = ops.get(m)
        if not op:
            continue
        for ctype, c in op.get("requestBody", {}).get("content", {}).items():
            for name, e in c.get("examples", {}).items():
                examples.setdefault(name, (path, m, op, e, ctype, None))
        for q in op.get("parameters", []):
            for name, e in q.get("examples", {}).items():
                examples.setdefault(name, (path, m, op, e, None, q))


def resolve(text):
    """A "{{name.field}}" string: the field of example name's answer (sending that example first)."""
    m = REF.match(text) if isinstance(text, str) else None
    if not m:
        return text
    name, field = m.groups()
    if name not in saved and name in examples:
        send(name, *examples[name])
    v = saved.get(name, {})
    for part in field.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v if isinstance(v, str) else text


def deep(v):
    if isinstance(v, dict):
        return {k: deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [deep(x) for x in v]
    return resolve(v)


def param_value(q, example):
    v = example.get("x-value", example.get("value")) if example is not None else None
    if v is None:
        v = q.get("example", next(iter(q.get("examples", {}).values()), {}).get("value"))
    return "" if v is None else str(resolve(v) if isinstance(v, str) else v)


def send(name, path, method, op, example, ctype, param):
    global passed, failed
    url_path = path
    for q in op.get("parameters", []):
        if q.get("in") == "path":
            url_path = url_path.replace("{" + q["name"] + "}",
                                        urllib.parse.quote(param_value(q, example if q is param else None), safe=""))
    query = dict((example or {}).get("x-query", {}))
    if param is not None and param.get("in") == "query":
        query[param["name"]] = param_value(param, example)
    url = base + url_path + ("?" + urllib.parse.urlencode(query) if query else "")
    cmd = ["curl", "-sS", "--max-time", "60", "-X", method.upper(), "-w", "%{http_code}", "-o", body_file.name]
    data = None
    if ctype is not None:
        value = deep(example.get("value"))
        data = (json.dumps(value) if ctype == "application/json" else str(value)).encode()
        cmd += ["-H", "Content-Type: " + ctype, "--data-binary", "@-"]
    r = subprocess.run(cmd + [url], input=data, capture_output=True)
    status = int(r.stdout or b"0")
    want = (example or {}).get("x-status")
    if want is None:
        want = next((int(s) for s in op.get("responses", {}) if s.startswith("2")), 200)
    want = want if isinstance(want, list) else [want]
    with open(body_file.name, "rb") as f:
        body = f.read()
    answer, json_ok = None, True
    if body[:1] in (b"{", b"["):
        try:
            answer = json.loads(body)
        except ValueError:
            json_ok = False
    label = f"{method.upper()} {path} [{name}] -> {status}"
    if status in want and json_ok:
        passed += 1
        print("ok   " + label)
    else:
        failed += 1
        print(f"FAIL {label}, want {want}{'' if json_ok else ', invalid JSON'}: {body[:200]!r} {r.stderr[:200]!r}")
    if isinstance(answer, dict):
        saved[name] = answer


with tempfile.NamedTemporaryFile() as body_file:
    for path, ops in doc["paths"].items():
        for m in METHODS:
            op = ops.get(m)
            if not op:
                continue
            first = next(((n, e) for n, (p, mm, o, e, c, q) in examples.items() if p == path and mm == m), None)
            if first:
                send(first[0], *examples[first[0]])
            else:
                send(op.get("operationId", path), path, m, op, None, None, None)
print(f"routes: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
