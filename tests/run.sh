#!/usr/bin/env bash
# Runs the test suites and prints one closing line "N passed, N failed".
#   tests/run.sh all|check|layout|unit|api|web|lint|fuzz|gpu|package|scale
# Each test program prints "<suite>: N passed, N failed" as its last line; this sums them.
# The programs are independent (each its own temp dir, daemons on port 0, its own /dev/shm names), so
# they run side by side: WARPD_TEST_JOBS at a time (default: twice the cores, since most of them wait on
# a daemon, a browser, dpkg or a slow client part of the time), the longest first. Each one's output
# is kept whole and printed in the order below once it and all before it are done, so a run reads the
# same whatever the timing.
# WARPD_TEST_JOBS=1 runs them one after another. `check` is the quick tier of `make check`: the layout
# rules, the unit programs and the emulator's API case table (tests/api/api.sh), with WARPD_TEST_QUICK=1
# (test_jit compiles each family's first two types at width 32 only).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
what=${1:-all}
cores=$(nproc 2>/dev/null || echo 2)
jobs=${WARPD_TEST_JOBS:-$((2 * cores))}
[ "$what" = gpu ] && jobs=1 # one GPU (or none): its programs one after another, as before
total_pass=0; total_fail=0; total_skip=0
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
[ "$what" = check ] && export WARPD_TEST_QUICK=1

# ---- the programs: prog NAME COMMAND... (in the order their output is printed)
names=(); cmds=()
prog() {
  local name=$1; shift
  names+=("$name"); cmds+=("$(printf '%q ' "$@")")
}
want() { [ "$what" = all ] || [ "$what" = "$1" ] || { [ "$what" = check ] && [[ " layout unit apicheck " == *" $1 "* ]]; }; }

# The house rules of server/ and kernels/ (the layered layout): include directions, no two files that need each
# other, calls up only where a README lists them, sizes (tests/layout/check.py, over the build's objects).
if want layout; then
  objects=$BUILD; [ "$what" = check ] && objects=$BUILD/asan # make check builds the sanitized tree only
  prog layout python3 tests/layout/check.py --objects "$objects"
  # One reduce request's walk through the files (tests/layout/walk.py): held at 16 files and 64 returns
  # so it does not grow (15 and 58 until the kernel key memo, compile/jit_memo.c, became a file of its
  # own: its text, look-up and store are three visits); the layout's old goal of 8 and 15 is withdrawn. Not in
  # `check`: it compiles the library once more (-O0, its own folder).
  [ "$what" != check ] && prog walk python3 tests/layout/walk.py --build "$BUILD/walk" --max-files 16 --max-returns 64
fi
if want unit; then
  for t in "$BUILD"/asan/tests/unit/test_*; do [ -x "$t" ] && [[ "$t" != *.[od] ]] && prog "unit/$(basename "$t")" "$t"; done
  # The plain tree's unit programs (jit_sweep: test_jit's sweep beyond its quick set); not in `check`,
  # which builds the sanitized tree only.
  if [ "$what" != check ]; then
    for t in "$BUILD"/tests/unit/*; do [ -x "$t" ] && [ -f "$t" ] && [[ "$t" != *.[od] ]] && prog "unit/$(basename "$t")" "$t"; done
  fi
fi
if want api; then
  for t in tests/api/*.sh; do [ -x "$t" ] && prog "api/$(basename "$t")" "$t"; done
elif want apicheck; then
  prog api/api.sh tests/api/api.sh # the case table and the C API programs on the emulator
fi
if want web; then
  for t in tests/web/run.sh tests/clients/run.sh; do [ -x "$t" ] && prog "$t" "$t"; done
fi
# The ecosystem's own linters (tests/lint): swagger-parser and redocly on the OpenAPI document, promtool on
# a daemon's /metrics, axe-core (WCAG 2 AA) on the playground in headless Chromium.
if want lint; then prog tests/lint/run.sh tests/lint/run.sh; fi
# The Debian package (tests/package: make deb, lintian, dpkg -i/-r as root), two replicas sharing a
# cache behind nginx (tests/scale), and the Python client with and without numpy plus its pip install
# (tests/clients/python.sh, with web); `tests/run.sh package` or `scale` runs one alone.
if want web; then prog tests/clients/python.sh tests/clients/python.sh; fi
if want package; then prog package tests/package/run.sh; fi
if want scale; then prog scale tests/scale/run.sh; fi
if want fuzz; then
  # libFuzzer harnesses (tests/fuzz/), each a fixed number of inputs from a fixed seed (FUZZ_FIXED:
  # the same every run, never flaky), each its own program so that they spread over the cores;
  # FUZZ_SECONDS=N runs each for N seconds instead.
  harnesses=()
  for b in "$BUILD"/fuzz/fuzz_*; do [ -x "$b" ] && [ -f "$b" ] && [[ "$b" != *.[od] ]] && harnesses+=("$(basename "$b")"); done
  if [ ${#harnesses[@]} -eq 0 ]; then
    prog fuzz tests/fuzz/run.sh # says no harness is built: a failure, not an empty pass
  elif [ -n "${FUZZ_SECONDS:-}" ]; then
    for h in "${harnesses[@]}"; do prog "fuzz/$h" env FUZZ_SECONDS="$FUZZ_SECONDS" tests/fuzz/run.sh "$h"; done
  else
    for h in "${harnesses[@]}"; do prog "fuzz/$h" env FUZZ_FIXED=1 tests/fuzz/run.sh "$h"; done
  fi
fi
gpu_here() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }
if [ "$what" = gpu ] && [ -x tests/unit/ops_gpu_check.sh ]; then
  # Host expression evaluator vs the device operators, bit for bit (needs nvcc and a GPU).
  if gpu_here; then prog gpu/ops_gpu_check tests/unit/ops_gpu_check.sh
  else echo "== gpu/ops_gpu_check: SKIPPED (no GPU)"; total_skip=$((total_skip+1)); fi
fi
if [ "$what" = gpu ] && [ -x tests/api/devices.sh ]; then
  # Devices, placement and sharding against a daemon on the GPUs (SKIPPED without one).
  prog gpu/devices tests/api/devices.sh --cuda
fi
if [ "$what" = gpu ]; then
  for t in "$BUILD"/tests/gpu/*; do [ -x "$t" ] && [ ! -d "$t" ] && [[ "$t" != *.[od] ]] && prog "gpu/$(basename "$t")" "$t"; done
fi

# ---- the start order: the longest first (seconds alone on the 2-core CI machine, rounded), so that the
# last to finish is a short one; a program not named here counts as 10 s.
cost() {
  case $1 in
    api/transport.sh) echo 62 ;; api/transport_tls.sh) echo 42 ;; package) echo 65 ;; unit/test_jit) echo 60 ;; api/api.sh) echo 59 ;;
    tests/web/run.sh) echo 49 ;; api/mockcuda.sh) echo 45 ;; tests/lint/run.sh) echo 40 ;;
    tests/clients/python.sh) echo 35 ;; walk) echo 35 ;; api/slow_conns.sh) echo 30 ;;
    api/shm.sh | api/channels.sh | api/prewarm.sh | scale | tests/clients/run.sh) echo 25 ;;
    *) echo 10 ;;
  esac
}
order=()
while read -r _ i; do order+=("$i"); done < <(for i in "${!names[@]}"; do echo "$(cost "${names[$i]}") $i"; done | sort -k1,1rn -k2,2n)

# ---- run: each program's output in $dir/N.out, its exit status in N.rc, "wall user sys" seconds in N.time
start() { # index
  local i=$1
  (
    TIMEFORMAT='%R %U %S'
    { time eval "${cmds[$i]}" >"$dir/$i.out" 2>&1 </dev/null; } 2>"$dir/$i.time"
    echo $? >"$dir/$i.rc.tmp" && mv "$dir/$i.rc.tmp" "$dir/$i.rc"
  ) &
}
tally() { # index: adds the program's last "N passed, N failed" line, or a failure when there is none
  local name=${names[$1]} log=$dir/$1.out line p f
  line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -z "$line" ]; then echo "!! $name printed no result line (crashed?)"; total_fail=$((total_fail+1)); return; fi
  p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  total_pass=$((total_pass+p)); total_fail=$((total_fail+f))
  if grep -q 'SKIPPED' "$log"; then total_skip=$((total_skip+1)); fi
}
times=() # "wall cpu name" of each program, printed at the end (where the suite's minutes go)
report() { # index: its output whole, then its tally
  local i=$1 name=${names[$1]} rc wall user sys
  rc=$(cat "$dir/$i.rc")
  read -r wall user sys <"$dir/$i.time" || true
  echo "== $name"
  cat "$dir/$i.out"
  times+=("$(printf '%5.0f %5.0f  %s' "${wall:-0}" "$(awk "BEGIN { print ${user:-0} + ${sys:-0} }")" "$name")")
  tally "$i"
  if [ "$rc" -ne 0 ] && ! grep -qE ' [1-9][0-9]* failed' "$dir/$i.out"; then echo "!! $name exited $rc"; total_fail=$((total_fail+1)); fi
}
n=${#names[@]}; started=0; shown=0
while [ $shown -lt "$n" ]; do
  while [ $started -lt "$n" ] && [ "$(jobs -rp | wc -l)" -lt "$jobs" ]; do start "${order[$started]}"; started=$((started+1)); done
  while [ $shown -lt "$n" ] && [ -f "$dir/$shown.rc" ]; do report $shown; shown=$((shown+1)); done
  [ $shown -lt "$n" ] && { wait -n 2>/dev/null || sleep 0.2; }
done
wait

echo
echo "seconds per program, the longest first (total ${SECONDS} s, $n programs, up to $jobs at a time on $cores cores):"
echo "   wall   cpu  program"
[ "$n" -gt 0 ] && printf '%s\n' "${times[@]}" | sort -rn | head -n 15 | sed 's/^/  /'
[ $total_skip -gt 0 ] && echo "NOTE: $total_skip suite(s) printed SKIPPED (see above)"
echo "$what: $total_pass passed, $total_fail failed"
[ $total_fail -eq 0 ]
