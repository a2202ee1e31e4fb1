#!/usr/bin/env python3
"""check.py — the house rules of server/ and kernels/ (the layered layout), checked from the source and objects.

Each layer folder has a README.md with a line `May include: a, b, ...` naming the folders its files
may #include (besides their own folder and system headers): util, kernels, http, compile, backend,
engine, api. server/*.c (main.c, flags.c) may include every folder. A README may list calls that run
up on lines `Calls up: <file.c> -> <file.c>: <why>` (at most 3 in all).

Checks, each one a test:
  includes   every #include "..." names its header by folder ("util/log.h") or, in the same folder, by
             name; a header of another folder only where the README allows it;
  circles    no two files need each other: no header includes itself through others, and,
             when objects are given (--objects DIR, the build's server/ and kernels/ .o files),
             through the symbols one file takes from another, an inline function of a header
             counting as its .c file's (stats.h's wp_stat_acc is stats.c's: the compiler leaves no
             symbol of it, and data.c calling it while stats.c calls data.c is a circle);
  up         calls from a lower layer to a higher one (from the objects), only those a README lists;
  sizes      no file over 700 lines and no function over 80, apart from the tables named in SIZE_EXEMPT;
  c++        every C header a .cu program includes (kernels/expr.h, and what it includes) compiles as
             C++ (g++ -fsyntax-only): nvcc reads them so, and a plain C idiom such as a void pointer
             taken as a char pointer broke the GPU machine's ops_gpu_check once, unseen here.
Prints one line per failure and a last line "layout: N passed, N failed".
"""
import collections
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAYERS = ["util", "kernels", "http", "compile", "backend", "engine", "api", "server"]
RANK = {name: i for i, name in enumerate(LAYERS)}
MAX_FILE_LINES, MAX_FUNC_LINES, MAX_CALLS_UP = 700, 80, 3
# Tables of data, not code: (file, function or None for the whole file).
SIZE_EXEMPT = {("server/flags.c", "usage")}

passed, failed = 0, 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL " + what)
    return ok


def folder_of(path):
    """server/util/log.c -> util; kernels/data.c -> kernels; server/main.c -> server."""
    parts = path.split("/")
    if parts[0] == "kernels":
        return "kernels"
    return parts[1] if len(parts) > 2 else "server"


def sources():
    out = sorted(glob.glob("server/**/*.[ch]", recursive=True) + glob.glob("kernels/*.[ch]"))
    return [p for p in out if folder_of(p) in RANK]


def readme_of(folder):
    return "kernels/README.md" if folder == "kernels" else f"server/{folder}/README.md"


def read_rules():
    allowed, calls_up = {}, set()
    for folder in LAYERS:
        if folder == "server":
            allowed[folder] = set(LAYERS)
            continue
        path = readme_of(folder)
        if not check(os.path.exists(path), f"{path}: every layer folder says what it owns and may call"):
            allowed[folder] = set()
            continue
        text = open(path).read()
        m = re.search(r"^May include:\s*(.*)$", text, re.M)
        check(m is not None, f"{path}: a line 'May include: ...' (or 'May include: nothing')")
        names = set(re.findall(r"[a-z]+", m.group(1))) - {"nothing"} if m else set()
        for n in names:
            check(n in RANK and RANK[n] < RANK[folder], f"{path}: may include {n}, which is not a lower layer")
        allowed[folder] = names | {folder}
        for a, b in re.findall(r"^Calls up:\s*(\S+)\s*->\s*(\S+?):", text, re.M):
            calls_up.add((a, b))
    check(len(calls_up) <= MAX_CALLS_UP, f"at most {MAX_CALLS_UP} calls up are listed (got {len(calls_up)})")
    return allowed, calls_up


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def resolve(includer, name):
    """The repository path a quoted include of ours names, or None (a test header, a template)."""
    here = os.path.join(os.path.dirname(includer), name)
    if os.path.exists(here):
        return os.path.normpath(here)
    for base in ("server", "."):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.exists(p):
            return p
    return None


def scc(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def check_includes(files, allowed):
    graph = collections.defaultdict(set)
    for f in files:
        src = folder_of(f)
        for name in INCLUDE.findall(open(f).read()):
            target = resolve(f, name)
            if target is None or not (target.startswith("server/") or target.startswith("kernels/")):
                continue
            dst = folder_of(target)
            same = os.path.dirname(target) == os.path.dirname(f)
            check(same or "/" in name and not name.startswith("."),
                  f'{f}: #include "{name}" names a header of another folder by its folder ("{dst}/...")')
            check(dst in allowed[src], f'{f}: #include "{name}": {src}/ may not include {dst}/ ({readme_of(src) if src != "server" else ""})')
            graph[f].add(target)
    for comp in scc(graph):
        check(False, "include circle: " + " -> ".join(comp))
    check(True, "includes")


def symbols(objdir):
    defs, uses = {}, {}
    for o in sorted(glob.glob(os.path.join(objdir, "server/**/*.o"), recursive=True) +
                    glob.glob(os.path.join(objdir, "kernels/*.o"))):
        src = os.path.relpath(o, objdir)[:-2] + ".c"
        if not os.path.exists(src):
            continue
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        used = set()
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBR":
                defs[p[2]] = src
            elif len(p) == 2 and p[0] == "U":
                used.add(p[1])
        uses[src] = used
    graph = collections.defaultdict(set)
    for f, used in uses.items():
        for s in used:
            if s in defs and defs[s] != f:
                graph[f].add(defs[s])
    return graph


INLINE_DEF = re.compile(r"^static\s+inline\b[^;{(=]*?\b(\w+)\s*\(", re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def inline_uses(files):
    """file -> the .c files whose header's static inline functions it calls (x.h's are x.c's)."""
    owner = {}
    for h in files:
        c = h[:-2] + ".c"
        if h.endswith(".h") and os.path.exists(c):
            for name in INLINE_DEF.findall(open(h).read()):
                owner[name] = c
    graph = collections.defaultdict(set)
    if not owner:
        return graph
    use = re.compile(r"\b(" + "|".join(map(re.escape, owner)) + r")\b")
    for f in files:
        if f.endswith(".c"):
            for name in set(use.findall(COMMENT.sub(" ", open(f).read()))):
                if owner[name] != f:
                    graph[f].add(owner[name])
    return graph


def check_calls(objdir, calls_up, files):
    graph = symbols(objdir)
    if not check(bool(graph), f"--objects {objdir}: no server/ or kernels/ objects there"):
        return
    inline = inline_uses(files)
    check(bool(inline), "inline functions of headers found (stats.h's wp_stat_acc, ...)")
    for f, owners in inline.items():
        graph[f].update(owners)
    for comp in scc(graph):
        check(False, "files that need each other (symbols, inline functions of headers): " + " <-> ".join(comp))
    for f in sorted(graph):
        for t in sorted(graph[f]):
            if RANK[folder_of(t)] > RANK[folder_of(f)]:
                check((f, t) in calls_up, f"{f} calls up into {t} (list it in {readme_of(folder_of(f))} with why, or move it)")
    check(True, "calls")


FUNC_START = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b(\w+)\s*\([^;]*$")


def check_sizes(files):
    for f in files:
        lines = open(f).read().split("\n")
        if (f, None) not in SIZE_EXEMPT:
            check(len(lines) - 1 <= MAX_FILE_LINES, f"{f}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})")
        name, start = None, 0
        for i, line in enumerate(lines):
            if name is None:
                m = FUNC_START.match(line)
                if m and not line.startswith((" ", "\t", "#", "/", "}")):
                    j = i  # the signature may run over several lines, up to the "{" that ends one
                    while j < len(lines) and not lines[j].rstrip().endswith(("{", ";", ")")):
                        j += 1
                    if j < len(lines) and lines[j].rstrip().endswith("{"):
                        name, start = m.group(1), i
            elif line.startswith("}"):
                n = i - start + 1
                if (f, name) not in SIZE_EXEMPT:
                    check(n <= MAX_FUNC_LINES, f"{f}:{start + 1}: {name} is {n} lines (at most {MAX_FUNC_LINES})")
                name = None
    check(True, "sizes")


def check_cplusplus():
    """The .h files that .cu programs (tests/, bench/) include by name compile as C++17."""
    headers = set()
    for cu in glob.glob("tests/**/*.cu", recursive=True) + glob.glob("bench/**/*.cu", recursive=True):
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+\.h)"', open(cu).read(), re.M):
            for base in (os.path.dirname(cu), ".", "server", "kernels"):
                if os.path.isfile(os.path.join(base, name)):
                    headers.add(os.path.normpath(os.path.join(base, name)))
                    break
    gxx = subprocess.run(["sh", "-c", "command -v g++"], capture_output=True, text=True).stdout.strip()
    if not gxx:
        print("layout: c++ check SKIPPED (no g++)")
        return
    for h in sorted(headers):
        r = subprocess.run([gxx, "-std=c++17", "-fsyntax-only", "-x", "c++", "-D_GNU_SOURCE", "-I.", "-Iserver",
                            "-Ikernels", "-Itemplates", h], capture_output=True, text=True)
        first = next((line for line in r.stderr.splitlines() if "error" in line), r.stderr.strip()[:200])
        check(r.returncode == 0, f"{h} does not compile as C++ (a .cu program includes it): {first}")
    check(bool(headers), "headers that .cu programs include found (kernels/expr.h, ...)")


def main():
    os.chdir(ROOT)
    objdir = None
    if "--objects" in sys.argv:
        objdir = sys.argv[sys.argv.index("--objects") + 1]
    files = sources()
    allowed, calls_up = read_rules()
    check_includes(files, allowed)
    if objdir:
        check_calls(objdir, calls_up, files)
    check_sizes(files)
    check_cplusplus()
    print(f"layout: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
