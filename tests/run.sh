#!/usr/bin/env bash
# Runs the test suites and prints one closing line "N passed, N failed".
#   tests/run.sh all|layout|unit|api|web|lint|fuzz|gpu|package|scale
# Each test program prints "<suite>: N passed, N failed" as its last line; this sums them.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
what=${1:-all}
total_pass=0; total_fail=0; total_skip=0
log=$(mktemp); trap 'rm -f "$log"' EXIT

tally() { # program output in $log
  local line p f
  line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -z "$line" ]; then echo "!! $1 printed no result line (crashed?)"; total_fail=$((total_fail+1)); return; fi
  p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  total_pass=$((total_pass+p)); total_fail=$((total_fail+f))
  if grep -q 'SKIPPED' "$log"; then total_skip=$((total_skip+1)); fi
}
times=() # "seconds name" of each program, printed at the end (where the suite's minutes go)
run_prog() { # name, command...
  local name=$1; shift
  echo "== $name"
  local t0=$SECONDS
  "$@" >"$log" 2>&1; local rc=$?
  times+=("$((SECONDS - t0)) $name")
  cat "$log"
  tally "$name"
  if [ $rc -ne 0 ] && ! grep -qE ' [1-9][0-9]* failed' "$log"; then echo "!! $name exited $rc"; total_fail=$((total_fail+1)); fi
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The house rules of server/ and kernels/ (the layered layout): include directions, no two files that need each
# other, calls up only where a README lists them, sizes (tests/layout/check.py, over the build's objects).
if [ "$what" = all ] || [ "$what" = layout ]; then
  run_prog layout python3 tests/layout/check.py --objects "$BUILD"
  # One reduce request's walk through the files (tests/layout/walk.py): held at today's 15 files and 58
  # returns so it does not grow; the layout's goal of 8 and 15 is not reached (see the script).
  run_prog walk python3 tests/layout/walk.py --build "$BUILD/walk" --max-files 15 --max-returns 58
fi
if [ "$what" = all ] || [ "$what" = unit ]; then
  for t in "$BUILD"/asan/tests/unit/test_*; do [ -x "$t" ] && run_prog "unit/$(basename "$t")" "$t"; done
fi
if [ "$what" = all ] || [ "$what" = api ]; then
  for t in tests/api/*.sh; do [ -x "$t" ] && run_prog "api/$(basename "$t")" "$t"; done
fi
if [ "$what" = all ] || [ "$what" = web ]; then
  for t in tests/web/run.sh tests/clients/run.sh; do [ -x "$t" ] && run_prog "$t" "$t"; done
fi
# The ecosystem's own linters (tests/lint): swagger-parser and redocly on the OpenAPI document, promtool on
# a daemon's /metrics, axe-core (WCAG 2 AA) on the playground in headless Chromium.
if [ "$what" = all ] || [ "$what" = lint ]; then run_prog tests/lint/run.sh tests/lint/run.sh; fi
# The Debian package (tests/package: make deb, lintian, dpkg -i/-r as root), two replicas sharing a
# cache behind nginx (tests/scale), and the Python client with and without numpy plus its pip install
# (tests/clients/python.sh, with web); `tests/run.sh package` or `scale` runs one alone.
if [ "$what" = all ] || [ "$what" = web ]; then run_prog tests/clients/python.sh tests/clients/python.sh; fi
if [ "$what" = all ] || [ "$what" = package ]; then run_prog package tests/package/run.sh; fi
if [ "$what" = all ] || [ "$what" = scale ]; then run_prog scale tests/scale/run.sh; fi
if [ "$what" = all ] || [ "$what" = fuzz ]; then
  # libFuzzer harnesses (tests/fuzz/), each a fixed number of inputs from a fixed seed (FUZZ_FIXED:
  # the same every run, never flaky); FUZZ_SECONDS=N runs each for N seconds instead.
  if [ -n "${FUZZ_SECONDS:-}" ]; then
    [ -x tests/fuzz/run.sh ] && run_prog fuzz env FUZZ_SECONDS="$FUZZ_SECONDS" tests/fuzz/run.sh
  else
    [ -x tests/fuzz/run.sh ] && run_prog fuzz env FUZZ_FIXED=1 tests/fuzz/run.sh
  fi
fi
if [ "$what" = gpu ] && [ -x tests/unit/ops_gpu_check.sh ]; then
  # Host expression evaluator vs the device operators, bit for bit (needs nvcc and a GPU).
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    run_prog gpu/ops_gpu_check tests/unit/ops_gpu_check.sh
  else
    echo "== gpu/ops_gpu_check: SKIPPED (no GPU)"; total_skip=$((total_skip+1))
  fi
fi
if [ "$what" = gpu ] && [ -x tests/api/devices.sh ]; then
  # Devices, placement and sharding against a daemon on the GPUs (SKIPPED without one).
  run_prog gpu/devices tests/api/devices.sh --cuda
fi
if [ "$what" = gpu ]; then
  for t in "$BUILD"/tests/gpu/*; do [ -x "$t" ] && [ ! -d "$t" ] && [[ "$t" != *.o ]] && [[ "$t" != *.d ]] && run_prog "gpu/$(basename "$t")" "$t"; done
fi
echo
echo "seconds per program, the longest first (total ${SECONDS} s):"
printf '%s\n' "${times[@]}" | sort -rn | head -n 12 | sed 's/^/  /'
[ $total_skip -gt 0 ] && echo "NOTE: $total_skip suite(s) printed SKIPPED (see above)"
echo "$what: $total_pass passed, $total_fail failed"
[ $total_fail -eq 0 ]
