#!/usr/bin/env python3
"""doc_examples.py — the curl examples of README.md and docs/*.md, as shell scripts to run.

    doc_examples.py OUTDIR PORT BUFFER_ID FILE.md...

An example is a code block (fenced, or indented by four spaces after a blank line) with a `curl`
command in it. Each becomes OUTDIR/NNN.sh, with the daemon's address pointed at 127.0.0.1:PORT
(`localhost:8080`, `127.0.0.1:8080`) and the placeholder buffer id `b-…` replaced by BUFFER_ID (a
buffer the caller made); `$hash` is left to the caller's environment, and `big.f32` to its working
directory. OUTDIR/index has one line per example: "NNN FILE:LINE" and, for an example that cannot run
against one emulator daemon on loopback, " SKIP reason". Such an example is marked in the Markdown by an
HTML comment on the line before its block (blank lines between are allowed):

    <!-- not run: the reason -->

Prints how many examples it found."""
import os
import re
import sys

CURL = re.compile(r"(^|[\s|;&(])curl\s")
SKIP = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->\s*$")


def blocks(lines):
    """Yields (first line number, lines of code) for each code block."""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        fence = re.match(r"^(```+|~~~+)", line)
        if fence:
            start, i = i + 1, i + 1
            body = []
            while i < n and not lines[i].startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            yield start, body  # start: the fence's line number (1-based)
            i += 1
            continue
        if line.startswith("    ") and (i == 0 or lines[i - 1].strip() == ""):
            start, body = i + 1, []
            while i < n and (lines[i].startswith("    ") or lines[i].strip() == ""):
                body.append(lines[i][4:])
                i += 1
            while body and body[-1].strip() == "":
                body.pop()
            yield start, body
            continue
        i += 1


def skip_reason(lines, start):
    """The reason of a `<!-- not run: ... -->` line just before the block that starts on line `start`."""
    j = start - 2  # index of the line before the block (before its fence, or its first indented line)
    while j >= 0 and lines[j].strip() == "":
        j -= 1
    m = SKIP.match(lines[j]) if j >= 0 else None
    return m.group(1) if m else None


def main():
    out, port, buffer_id, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(out, exist_ok=True)
    count = 0
    with open(os.path.join(out, "index"), "w") as index:
        for path in files:
            lines = open(path, encoding="utf-8").read().split("\n")
            for start, body in blocks(lines):
                if not any(CURL.search(l) for l in body):
                    continue
                count += 1
                code = "\n".join(body) + "\n"
                for addr in ("localhost:8080", "127.0.0.1:8080"):
                    code = code.replace(addr, f"127.0.0.1:{port}")
                code = code.replace("b-…", buffer_id)
                name = f"{count:03d}"
                with open(os.path.join(out, name + ".sh"), "w") as f:
                    f.write(code)
                why = skip_reason(lines, start)
                index.write(f"{name} {path}:{start}" + (f" SKIP {why}" if why else "") + "\n")
    print(count)


if __name__ == "__main__":
    main()
