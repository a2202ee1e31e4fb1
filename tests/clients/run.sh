#!/usr/bin/env bash
# Client tests: starts $BUILD/warpd (builds nothing) on a free loopback port with a fresh cache, runs
# tests/clients/test_python.py (unittest, standard library only) against it, stops it, and ends with
# "clients: N passed, N failed" (a skipped test counts as failed; each curl script is a check too).
# The docs are checked here too: every curl example of README.md and docs/*.md runs against the daemon
# (tests/clients/doc_examples.py finds them; one marked <!-- not run: why --> is only syntax-checked),
# README.md is at most 250 lines, and every .md file README.md and docs/*.md name exists.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
give_up() { echo "!! $*"; echo "clients: 0 passed, 1 failed"; exit 1; }

[ -x "$BUILD/warpd" ] || give_up "$BUILD/warpd is missing (run make first)"
. tests/daemon.sh
warpd_start "$BUILD/warpd" "$tmp" --backend emu || { cat "$tmp/err"; give_up "the daemon did not start"; }

WARPD_URL="http://127.0.0.1:$port" timeout 300 python3 -m unittest -v tests/clients/test_python.py 2>&1 | tee "$tmp/log"

# Every curl script runs cleanly against the daemon and stands verbatim in README.md or a docs/*.md.
curl_pass=0; curl_fail=0
for script in clients/curl/*.sh; do
  name=$(basename "$script")
  if ! WARPD="http://127.0.0.1:$port" timeout 60 sh "$script" >"$tmp/curl.out" 2>&1 || grep -qE '^\{"error":' "$tmp/curl.out"; then
    echo "FAIL curl $name:"; head -c 600 "$tmp/curl.out"; echo; curl_fail=$((curl_fail+1))
  elif ! python3 - "$script" <<'PY'
import sys
import glob
body = open(sys.argv[1]).read().split("\n", 1)[1]  # all but the shebang
docs = ["README.md"] + sorted(glob.glob("docs/*.md"))
sys.exit(0 if any(body.strip() in open(d).read() for d in docs) else 1)
PY
  then echo "FAIL curl $name is not in README.md or docs/*.md verbatim"; curl_fail=$((curl_fail+1))
  else echo "ok curl $name"; curl_pass=$((curl_pass+1)); fi
done

# Every curl example of the docs runs against the same daemon, in the order the docs give them, from
# a directory holding big.f32 (4096 floats), with "b-…" standing for a buffer made here and $hash for
# a cache entry's hash; it must exit 0 and print no error object. An example marked not run (see
# doc_examples.py) is only checked for syntax.
mkdir -p "$tmp/work"
python3 -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<4096f", *[(i % 97) * 0.25 for i in range(4096)]))' >"$tmp/work/big.f32"
if ! command -v jq >/dev/null; then # `jq -r .FIELD`, all the examples ask of it
  mkdir -p "$tmp/bin"; printf '%s\n' '#!/usr/bin/env python3' 'import json, sys' \
    'print(json.load(sys.stdin)[sys.argv[-1].lstrip(".")])' >"$tmp/bin/jq"; chmod +x "$tmp/bin/jq"
fi
doc_buffer=$(curl -sS "http://127.0.0.1:$port/v1/buffers" -X PUT -H 'Content-Type: application/json' \
  -d '{"type":"f32","generate":{"kind":"iota","n":1000}}' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
n_examples=$(python3 tests/clients/doc_examples.py "$tmp/ex" "$port" "${doc_buffer:-b-none}" README.md docs/*.md)
echo "doc examples: $n_examples curl examples in README.md and docs/*.md"
[ "${n_examples:-0}" -gt 0 ] || { echo "FAIL no curl examples found in README.md and docs/*.md"; curl_fail=$((curl_fail+1)); }
while read -r num where skip why; do
  if [ "$skip" = SKIP ]; then
    if bash -n "$tmp/ex/$num.sh" 2>"$tmp/ex.out"; then echo "ok example $where (not run: $why; syntax checked)"; curl_pass=$((curl_pass+1))
    else echo "FAIL example $where does not parse:"; cat "$tmp/ex.out"; curl_fail=$((curl_fail+1)); fi
    continue
  fi
  hash=$(curl -sS "http://127.0.0.1:$port/v1/compile" -H 'Content-Type: application/json' \
    -d '{"family":"shfl_xor","type":"i32"}' | sed -n 's/.*"hash":"\([0-9a-f]*\)".*/\1/p')
  if (cd "$tmp/work" && PATH="$tmp/bin:$PATH" WARPD="http://127.0.0.1:$port" hash=$hash \
        timeout 120 bash -e -o pipefail "$tmp/ex/$num.sh" </dev/null) >"$tmp/ex.out" 2>&1 && ! grep -q '"error":{"code"' "$tmp/ex.out"
  then echo "ok example $where"; curl_pass=$((curl_pass+1))
  else echo "FAIL example $where:"; sed 's/^/     /' "$tmp/ex/$num.sh"; echo "  gave:"; head -c 800 "$tmp/ex.out"; echo; curl_fail=$((curl_fail+1)); fi
done <"$tmp/ex/index"
kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=

# README.md stays a front page (at most 250 lines; the reference is in docs/), and every Markdown file
# that README.md and docs/*.md link to or name (docs/x.md, or x.md inside docs/) exists.
readme_lines=$(wc -l <README.md)
if [ "$readme_lines" -le 250 ]; then echo "ok README.md has $readme_lines lines (at most 250)"; curl_pass=$((curl_pass+1))
else echo "FAIL README.md has $readme_lines lines, more than 250: move reference text to docs/"; curl_fail=$((curl_fail+1)); fi
if python3 - README.md docs/*.md <<'PY'
import os, re, sys
bad, seen = [], 0
for doc in sys.argv[1:]:
    text, here = open(doc).read(), os.path.dirname(doc)
    targets = [(t, here) for t in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text) if "://" not in t]
    targets += [(t, ".") for t in re.findall(r"(?<![\w/.-])(docs/[\w.-]+\.md)", text)]
    for t, base in targets:
        seen += 1
        if not os.path.isfile(os.path.normpath(os.path.join(base, t))):
            bad.append(f"{doc}: {t}")
print(f"{seen} links and names of .md files checked")
for b in bad: print("missing:", b)
sys.exit(1 if bad else 0)
PY
then echo "ok every .md file that README.md and docs/*.md name exists"; curl_pass=$((curl_pass+1))
else echo "FAIL README.md or docs/*.md names a .md file that does not exist"; curl_fail=$((curl_fail+1)); fi

# A daemon with --token-file: every script sends $WARPD_TOKEN; without it, one that needs it fails (401).
token=curl-test-token-0123456789abcdef
printf '%s\n' "$token" >"$tmp/token"
if warpd_start "$BUILD/warpd" "$tmp" --backend emu --token-file "$tmp/token"; then
  for script in clients/curl/*.sh; do
    name=$(basename "$script")
    if WARPD="http://127.0.0.1:$port" WARPD_TOKEN=$token timeout 60 sh "$script" >"$tmp/curl.out" 2>&1 &&
       ! grep -qE '^\{"error":' "$tmp/curl.out"; then echo "ok curl $name with WARPD_TOKEN"; curl_pass=$((curl_pass+1))
    else echo "FAIL curl $name with WARPD_TOKEN:"; head -c 600 "$tmp/curl.out"; echo; curl_fail=$((curl_fail+1)); fi
  done
  if WARPD="http://127.0.0.1:$port" WARPD_TOKEN= sh clients/curl/info.sh >"$tmp/curl.out" 2>&1; then
    echo "FAIL curl info.sh without WARPD_TOKEN succeeded"; curl_fail=$((curl_fail+1))
  else echo "ok curl info.sh without WARPD_TOKEN fails"; curl_pass=$((curl_pass+1)); fi
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
else
  cat "$tmp/err"; echo "FAIL the daemon with a token did not start"; curl_fail=$((curl_fail+1))
fi

ran=$(sed -nE 's/^Ran ([0-9]+) tests?.*/\1/p' "$tmp/log" | tail -n 1)
[ -n "$ran" ] || give_up "unittest printed no summary"
num() { sed -nE "s/.*$1=([0-9]+).*/\\1/p" "$tmp/log" | tail -n 1; }
failures=$(num failures); errors=$(num errors); skipped=$(num skipped); unexpected=$(num 'unexpected successes')
failed=$(( ${failures:-0} + ${errors:-0} + ${unexpected:-0} ))
passed=$(( ran - failed - ${skipped:-0} + curl_pass ))
failed=$(( failed + ${skipped:-0} + curl_fail ))  # a skipped test is a failed check here
echo "clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
