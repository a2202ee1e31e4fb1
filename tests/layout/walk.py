#!/usr/bin/env python3
"""walk.py — one reduce request's walk through the source files, measured from object files (the layered layout).

The layout's goal: "Following one `job` through `wp_reduce_run` enters 12 files, with 56 returns to a file
already left and 26 climbs back up" (base commit 8416985, server/ flat); required afterwards: "enters
at most 8 files, and returns to a file already left at most 15 times". This script measures that.

The call graph
  The library (every server/**/*.c but server/main.c, and kernels/*.c) is compiled into --build
  (default build/walk) with cc -std=c11 -O0 -fno-inline -ffunction-sections -fdata-sections
  -D_GNU_SOURCE -I. -Iserver -Ikernels (plus any other -I of the Makefile's ALL_CFLAGS), the CUDA and
  pkg-config include folders and dummy WP_DEFAULT_* strings; 2 compilers at a time, again only for
  what changed (each object's .d). With one section per function (.text.<name>, static ones
  included), `objdump -t` and `objdump -dr` give, for each function, the functions it refers to in
  instruction order: relocations R_X86_64_PLT32 / PC32 / GOTPCREL* / 32 / 32S / 64 against a function
  symbol or its .text.<fn> section symbol. A static function is known by (object, name); a name
  resolves in the caller's own object first, then among the globals of all objects; anything else
  (libc, libmicrohttpd, nvrtc, ...) is not followed. A function defined in a header (static inline)
  belongs to the .c file whose object holds it.
  Function pointers (--fnptr code, the default): a function whose address is taken in code (`lea
  fn(%rip)`: the thread body handed to pthread_create, a qsort comparator, a callback) counts as
  called at that point. Calls through pointers held in data (b->ops->run) are not followed, so the
  walk stops at backend/backend.c's dispatch. (--fnptr none: addresses ignored; --fnptr data: also
  the functions listed in a data object the code refers to, e.g. the families table.)

The walk (the definition chosen, by calibration on the base commit; see below)
  Depth first from wp_reduce_run; each function entered once (a callee already visited is skipped);
  callees in instruction order. The file sequence is the file of each function in the order the
  walk enters them (--moves calls): a step from one function entered to the next one entered moves
  between files when their files differ (returns to the caller are implicit: after a callee in
  another file returns, the caller's next callee is entered from the callee's file).
  Which files count (--count server): every file but the base commit's kernels/ tables (kernels/
  allreduce data families lanes match permute reduce redux scan shfl stencil types vote .c) -- at the
  base, exactly the files in server/; after the restructure the same code wherever it lives
  (kernels/expr*.c and kernels/spec.c, once server/expr.c and server/spec.c, still count).
  The walk goes through the files that do not count (--uncounted transparent); they are left out of
  the file sequence, as if their functions were part of no file.
    files   = distinct files in the sequence (the file of wp_reduce_run included)
    returns = moves into a file the sequence had been in before (left, and now entered again)
    climbs  = moves from a file of a lower layer to one of a higher layer, the order being
              util(0) < kernels(1) < http(2) < compile(3) < backend(4) < engine(5) < api(6) < main(7)
  Layer of a file: its folder under server/ (server/engine/x.c: engine); kernels/*: kernels; a file
  directly in server/ (the flat base): FLAT_LAYERS below, by basename, else main (server/flags.c).

Calibration, base commit 8416985 (the goal's count: 12 files, 56 returns, 26 climbs), files/returns/climbs:
                        --moves calls (entries only)       --moves both (entries and returns)
  --count     --fnptr:  none        code        data       none         code         data
  server                13/53/22    13/58/25 *  13/58/25   13/94/37     13/100/41    13/100/41
  all                   16/72/27    16/77/30    26/104/27  16/133/46    16/139/50    26/213/46
  no-util               13/67/23    13/72/26    23/99/23   13/120/38    13/126/42    23/200/38
  no-kernels            11/44/19    11/49/22    11/49/22   11/80/32     11/86/36     11/86/36
  no-util-kernels        8/39/15     8/44/18     8/44/18    8/67/24      8/73/28      8/73/28
  * chosen: 13/58/25 is the closest (12 if the start's own file is not counted as entered).
  --uncounted prune (calls into uncounted files not followed) gives the same numbers at the base.
  Counting the returns to the caller as moves too (--moves both) doubles the returns (about 100 for
  13 files); no variant of it comes near 56.

Usage
  tests/layout/walk.py [--build DIR] [--root DIR] [--max-files N] [--max-returns N] [--verbose]
  With a limit, a last line "walk: 1 passed, 0 failed" (or 0 passed, 1 failed) for tests/run.sh.
  Exit 0 when within the limits, 1 when the walk exceeds --max-files or --max-returns, 2 when the
  build or the analysis fails (a file that does not compile fails it, unless --keep-going). The last
  line of output is
      walk: files N, returns N, climbs N
  --verbose prints the file sequence first: one line per stay in a file, with the function that
  called into it and the functions entered there; R marks a return, ^ a climb.
Plain Python 3 standard library; needs cc, objdump and pkg-config (libmicrohttpd, libcjson).
"""

import argparse
import concurrent.futures
import hashlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

START = "wp_reduce_run"
LAYERS = ["util", "kernels", "http", "compile", "backend", "engine", "api", "main"]
LAYER_RANK = {name: i for i, name in enumerate(LAYERS)}

# The base commit's flat server/: basename (without .c) -> layer. A trailing * is a prefix.
FLAT_LAYERS = {
    "util": "common log sha256 base64 histo jsonout",
    "kernels": "expr spec",
    "http": "http http_loop listen access conn_guard reqlog metrics",
    "compile": "jit cache cache_disk",
    "backend": "backend* cuda_* warp_grid",
    "engine": "kernel placement emu_limit batch* bgbuild buffers jobs reduce shard prewarm",
    "api": "api_* jsonval",
    "main": "main",
}
# The base commit's kernels/*.c (the family and type tables); --count server leaves them out.
BASE_KERNEL_TABLES = set("allreduce data families lanes match permute reduce redux scan shfl stencil types vote".split())

BASE_CFLAGS = [
    "-std=c11", "-O0", "-fno-inline", "-ffunction-sections", "-fdata-sections", "-D_GNU_SOURCE",
    "-I.", "-Iserver", "-Ikernels",
]
DEFINES = ['-DWP_DEFAULT_TEMPLATES="x"', '-DWP_DEFAULT_WEB="x"', '-DWP_DEFAULT_CUDA_HOME="x"']


# ---------------------------------------------------------------------------------------- layers
def layer_of(rel):
    """Layer of a source file given relative to the root, or None when unknown."""
    parts = Path(rel).parts
    if parts and parts[0] == "kernels":
        return "kernels"
    if len(parts) >= 3 and parts[0] == "server":
        return parts[1] if parts[1] in LAYER_RANK else None
    if len(parts) == 2 and parts[0] == "server":
        base = Path(parts[1]).stem
        for layer, names in FLAT_LAYERS.items():
            for pat in names.split():
                if (pat.endswith("*") and base.startswith(pat[:-1])) or base == pat:
                    return layer
        return "main"  # after the restructure, what stays in server/ itself (main.c, flags.c)
    return None


def counted(rel, count):
    """Whether a file counts in the file sequence under the --count definition."""
    layer = layer_of(rel)
    p = Path(rel)
    if count == "all":
        return True
    if count == "server":  # the base's server/ files, wherever they are now: all but its kernels/ tables
        return not (p.parts[0] == "kernels" and p.stem in BASE_KERNEL_TABLES)
    if count == "server-dir":  # literally the files under server/ now
        return p.parts[0] == "server"
    if count == "no-util":
        return layer != "util"
    if count == "no-kernels":  # neither kernels/ nor the kernels layer's files in server/
        return layer != "kernels"
    if count == "no-util-kernels":
        return layer not in ("util", "kernels")
    raise ValueError(count)


# ----------------------------------------------------------------------------------------- build
def sources(root):
    srcs = sorted(p for p in (root / "server").rglob("*.c") if p.relative_to(root).as_posix() != "server/main.c")
    srcs += sorted((root / "kernels").glob("*.c"))
    return [p.relative_to(root).as_posix() for p in srcs]


def makefile_includes(root):
    """Extra -I folders named in the Makefile's ALL_CFLAGS (those not written with $(...))."""
    try:
        text = (root / "Makefile").read_text()
    except OSError:
        return []
    m = re.search(r"^ALL_CFLAGS\s*:?=((?:.*\\\n)*.*)$", text, re.M)
    if not m:
        return []
    flags = m.group(1).replace("\\\n", " ").split()
    return [f for f in flags if f.startswith("-I") and "$" not in f and f not in BASE_CFLAGS]


def cflags(root):
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    try:
        pkg = subprocess.run(["pkg-config", "--cflags", "libmicrohttpd", "libcjson"], capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pkg = []
    return BASE_CFLAGS + makefile_includes(root) + [f"-I{cuda}/include"] + pkg + DEFINES


def up_to_date(root, obj, dep):
    """The object is newer than its source and every header its .d file names."""
    if not obj.exists() or not dep.exists():
        return False
    t = obj.stat().st_mtime
    text = dep.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if ":" not in line:
            continue
        for f in line.split(":", 1)[1].split():
            try:
                if os.stat(root / f).st_mtime > t:
                    return False
            except OSError:
                return False
        break  # the first rule is the object's; the rest are -MP's phony targets
    return True


def build(root, bdir, jobs):
    """Compiles every source into bdir; returns {rel source: object path}. Raises on errors."""
    cc = os.environ.get("CC", "cc")
    flags = [cc] + cflags(root)
    stamp = bdir / "flags"
    key = hashlib.sha256("\0".join(flags + [str(root)]).encode()).hexdigest()
    bdir.mkdir(parents=True, exist_ok=True)
    fresh = stamp.exists() and stamp.read_text() == key
    objs, todo = {}, []
    for rel in sources(root):
        obj = bdir / (rel[:-2] + ".o")
        dep = bdir / (rel[:-2] + ".d")
        objs[rel] = obj
        if not (fresh and up_to_date(root, obj, dep)):
            todo.append((rel, obj, dep))

    def one(item):
        rel, obj, dep = item
        obj.parent.mkdir(parents=True, exist_ok=True)
        cmd = flags + ["-MMD", "-MP", "-MF", str(dep), "-c", rel, "-o", str(obj)]
        r = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        return rel, r.returncode, r.stderr, cmd

    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for rel, rc, err, cmd in pool.map(one, todo):
            if rc != 0:
                failed.append(rel)
                sys.stderr.write(f"walk: cc failed on {rel}:\n  {shlex.join(cmd)}\n{err}")
                objs[rel].unlink(missing_ok=True)
    stamp.write_text(key)
    return objs, failed


# -------------------------------------------------------------------------------------- analysis
SYM_RE = re.compile(r"^([0-9a-f]+) (.{7}) (\S+)\t([0-9a-f]+) (?:\.hidden )?(.+)$")
SEC_RE = re.compile(r"^Disassembly of section (.+):$")
FUNC_RE = re.compile(r"^[0-9a-f]+ <(.+)>:$")
INSN_RE = re.compile(r"^\s*[0-9a-f]+:\t(?:[0-9a-f]{2} )+\s*\t(.*)$")
RELOC_RE = re.compile(r"^\s*[0-9a-f]+: (R_X86_64_\w+)\t(.+)$")
DATA_RELOC_RE = re.compile(r"^[0-9a-f]+ (R_X86_64_\w+)\s+(.+)$")
RELOC_SEC_RE = re.compile(r"^RELOCATION RECORDS FOR \[(.+)\]:$")
CALL_RELOCS = {"R_X86_64_PLT32", "R_X86_64_PC32", "R_X86_64_GOTPCREL", "R_X86_64_GOTPCRELX",
               "R_X86_64_REX_GOTPCRELX", "R_X86_64_32", "R_X86_64_32S", "R_X86_64_64"}


def split_target(t):
    m = re.match(r"^(.*?)([+-]0x[0-9a-f]+)?$", t.strip())
    return m.group(1)


def objdump(args, obj):
    return subprocess.run(["objdump"] + args + [str(obj)], capture_output=True, text=True, check=True).stdout


class Graph:
    """Functions and data objects of all objects; a node id is (rel source, name)."""

    def __init__(self):
        self.file_of = {}  # node -> rel source
        self.is_func = {}  # node -> bool
        self.globals = {}  # name -> node (global / weak definitions)
        self.local = {}  # rel -> {name: node}
        self.section = {}  # rel -> {section name: node}
        self.refs = {}  # node -> [(kind, target node)]; kind 'call' | 'addr'
        self.objects = []  # (rel, object path) read by add_object, linked by link

    def add_object(self, rel, obj):
        self.local[rel], self.section[rel] = {}, {}
        for line in objdump(["-t"], obj).splitlines():
            m = SYM_RE.match(line)
            if not m:
                continue
            _, fl, sec, _, name = m.groups()
            if sec in ("*UND*", "*ABS*") or fl[6] == "d" or fl[6] == "f":
                continue
            if fl[6] not in ("F", "O"):
                continue
            node = (rel, name)
            self.file_of[node] = rel
            self.is_func[node] = fl[6] == "F"
            self.local[rel][name] = node
            self.section[rel].setdefault(sec, node)
            if fl[0] in ("g", "u") or fl[1] == "w":
                self.globals.setdefault(name, node)
        self.objects.append((rel, obj))

    def resolve(self, rel, target):
        name = split_target(target)
        if name in self.section[rel]:
            return self.section[rel][name]
        if name in self.local[rel]:
            return self.local[rel][name]
        return self.globals.get(name)

    def link(self):
        for rel, obj in self.objects:
            self._code(rel, obj)
            self._data(rel, obj)

    def _code(self, rel, obj):
        cur, insn = None, ""
        for line in objdump(["-dr"], obj).splitlines():
            m = FUNC_RE.match(line)
            if m:
                cur = self.local[rel].get(m.group(1))
                if cur is not None:
                    self.refs.setdefault(cur, [])
                continue
            m = INSN_RE.match(line)
            if m:
                if m.group(1).strip():
                    insn = m.group(1)
                continue
            m = RELOC_RE.match(line)
            if m and cur is not None and m.group(1) in CALL_RELOCS:
                tgt = self.resolve(rel, m.group(2))
                if tgt is None:
                    continue
                ops = insn.split()
                kind = "call" if any(o in ("call", "callq", "jmp", "jmpq") for o in ops[:3]) else "addr"
                self.refs[cur].append((kind, tgt))

    def _data(self, rel, obj):
        sec = None
        for line in objdump(["-r"], obj).splitlines():
            m = RELOC_SEC_RE.match(line)
            if m:
                sec = m.group(1)
                sec = sec[len(".rela"):] if sec.startswith(".rela") else sec
                continue
            m = DATA_RELOC_RE.match(line)
            if not m or sec is None or sec.startswith(".text") or sec.startswith(".debug"):
                continue
            owner = self.section[rel].get(sec)
            if owner is None or self.is_func.get(owner):
                continue
            tgt = self.resolve(rel, m.group(2))
            if tgt is not None:
                self.refs.setdefault(owner, []).append(("addr", tgt))

    def callees(self, fn, fnptr):
        """Functions fn calls, in order, under the --fnptr definition."""
        out, seen_data = [], set()

        def add(refs, from_data):
            for kind, tgt in refs:
                if self.is_func.get(tgt):
                    if kind == "call" or fnptr == "data" or (fnptr == "code" and not from_data):
                        out.append(tgt)
                elif fnptr == "data" and tgt not in seen_data:
                    seen_data.add(tgt)
                    add(self.refs.get(tgt, []), True)

        add(self.refs.get(fn, []), False)
        return out


# ------------------------------------------------------------------------------------------ walk
def walk(graph, start, fnptr, count, uncounted):
    """Depth-first walk from start. Returns the events (kind, node, depth, caller): kind 'enter' when
    the walk enters node (called by caller), 'back' when it returns to node from a callee."""
    events, visited = [], {start}

    def follow(n):
        return uncounted == "transparent" or counted(graph.file_of[n], count)

    events.append(("enter", start, 0, None))
    stack = [(start, iter(graph.callees(start, fnptr)))]
    while stack:
        fn, it = stack[-1]
        for callee in it:
            if callee in visited or not follow(callee):
                continue
            visited.add(callee)
            events.append(("enter", callee, len(stack), fn))
            stack.append((callee, iter(graph.callees(callee, fnptr))))
            break
        else:
            stack.pop()
            if stack:
                events.append(("back", stack[-1][0], len(stack) - 1, None))
    return events


def measure(graph, events, count, moves):
    """The file sequence (segments of consecutive steps in one file) and its counts.
    moves 'calls': one step per function entered; 'both': also one per return to the caller."""
    segs, seen, returns, climbs = [], set(), 0, 0
    for kind, node, depth, caller in events:
        if kind == "back" and moves == "calls":
            continue
        f = graph.file_of[node]
        if not counted(f, count):
            continue  # not counted: the walk passes through, the file sequence does not see it
        if segs and segs[-1]["file"] == f:
            if kind == "enter":
                segs[-1]["fns"].append(node[1])
            continue
        seg = {"file": f, "kind": kind, "node": node, "caller": caller, "depth": depth,
               "fns": [node[1]] if kind == "enter" else [], "ret": False, "climb": False}
        if segs:
            prev = segs[-1]["file"]
            if f in seen:
                seg["ret"] = True
                returns += 1
            lp, lf = layer_of(prev), layer_of(f)
            if lp is not None and lf is not None and LAYER_RANK[lp] < LAYER_RANK[lf]:
                seg["climb"] = True
                climbs += 1
        seen.add(f)
        segs.append(seg)
    return segs, len(seen), returns, climbs


def short(rel):
    return rel[len("server/"):] if rel.startswith("server/") else rel


def print_walk(graph, segs):
    print("walk: one line per stay in a file; R: a return to a file already left, ^: a climb to a higher layer")
    for i, s in enumerate(segs):
        mark = ("R" if s["ret"] else " ") + ("^" if s["climb"] else " ")
        layer = layer_of(s["file"]) or "?"
        if s["kind"] == "back":
            how = f"back in {s['node'][1]}"
        elif s["caller"] is None:
            how = "start"
        else:
            c = s["caller"]
            how = f"from {c[1]}" + ("" if c[0] == segs[i - 1]["file"] or i == 0 else f" ({short(c[0])})")
        fns = s["fns"]
        shown = ", ".join(fns[:6]) + (f", ... (+{len(fns) - 6})" if len(fns) > 6 else "")
        print(f"  {i:3d} {mark} {short(s['file']):24s} {layer:8s} {how}: {shown}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=None, help="source tree (default: this script's repository)")
    ap.add_argument("--build", default=None, help="object folder (default: ROOT/build/walk)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel compilers (default 2)")
    ap.add_argument("--start", default=START, help=f"function the walk starts from (default {START})")
    ap.add_argument("--max-files", type=int, default=None, help="exit 1 when the walk enters more files")
    ap.add_argument("--max-returns", type=int, default=None, help="exit 1 when it returns more often")
    ap.add_argument("--verbose", "-v", action="store_true", help="print the walk")
    ap.add_argument("--count", default="server",
                    choices=["server", "all", "server-dir", "no-util", "no-kernels", "no-util-kernels"],
                    help="which files count (default server: all but the base's kernels/ tables)")
    ap.add_argument("--uncounted", default="transparent", choices=["transparent", "prune"],
                    help="calls into files not counted: followed, unseen (default), or not followed")
    ap.add_argument("--moves", default="calls", choices=["calls", "both"],
                    help="file sequence: the file of each function entered (default), or also each return")
    ap.add_argument("--fnptr", default="code", choices=["none", "code", "data"],
                    help="function addresses: ignored, taken in code count as calls (default), "
                         "or also those in data tables the code refers to")
    ap.add_argument("--keep-going", action="store_true", help="measure even when some files do not compile")
    a = ap.parse_args()

    root = Path(a.root).resolve() if a.root else Path(__file__).resolve().parents[2]
    bdir = Path(a.build).resolve() if a.build else root / "build" / "walk"
    try:
        objs, failed = build(root, bdir, max(1, a.jobs))
    except OSError as e:
        print(f"walk: build failed: {e}", file=sys.stderr)
        return 2
    if failed and not a.keep_going:
        print(f"walk: {len(failed)} file(s) did not compile: {' '.join(failed)} (--keep-going measures without them)",
              file=sys.stderr)
        return 2

    graph = Graph()
    try:
        for rel, obj in objs.items():
            if obj.exists():
                graph.add_object(rel, obj)
        graph.link()
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"walk: objdump failed: {e}", file=sys.stderr)
        return 2
    start = graph.globals.get(a.start)
    if start is None or not graph.is_func.get(start):
        print(f"walk: no function {a.start} in the objects", file=sys.stderr)
        return 2

    events = walk(graph, start, a.fnptr, a.count, a.uncounted)
    segs, files, returns, climbs = measure(graph, events, a.count, a.moves)
    unknown = sorted({s["file"] for s in segs if layer_of(s["file"]) is None})
    if unknown:
        print(f"walk: no layer for {' '.join(unknown)} (no climbs counted to or from them)", file=sys.stderr)
    nfn = sum(1 for e in events if e[0] == "enter")
    if a.verbose:
        print_walk(graph, segs)
        print(f"files entered: {' '.join(short(f) for f in dict.fromkeys(s['file'] for s in segs))}")
        print(f"({nfn} functions visited; --count {a.count} --uncounted {a.uncounted} --moves {a.moves} "
              f"--fnptr {a.fnptr})")
    over = []
    if a.max_files is not None and files > a.max_files:
        over.append(f"files {files} > {a.max_files}")
    if a.max_returns is not None and returns > a.max_returns:
        over.append(f"returns {returns} > {a.max_returns}")
    if over:
        print(f"walk: over the limit: {', '.join(over)}", file=sys.stderr)
    print(f"walk: files {files}, returns {returns}, climbs {climbs}")
    if a.max_files is not None or a.max_returns is not None:  # a test's tally line (tests/run.sh)
        print(f"walk: {0 if over else 1} passed, {1 if over else 0} failed")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
