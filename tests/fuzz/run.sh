#!/usr/bin/env bash
# Runs every libFuzzer harness ($BUILD/fuzz/fuzz_*) for FUZZ_SECONDS each, one after another, from its
# seed corpus tests/fuzz/corpus/<harness>/ (read only: new inputs go to a temporary directory, crashes
# to $BUILD/fuzz/artifacts/). Prints each harness's executions and one closing line
# "fuzz: N passed, N failed" (a harness fails on a crash, a leak, a timeout or a sanitizer report).
#   tests/fuzz/run.sh [harness...]      FUZZ_SECONDS (default 20), FUZZ_ARGS (more libFuzzer flags)
# FUZZ_FIXED=1 (what make test sets): instead of a time, each harness runs a fixed number of inputs
# (runs_for below, about 3 s each on a 2-core machine) from a fixed seed, so the same tree gives the
# same inputs every time: make test cannot pass on one machine and fail on the next because one found
# further. The open-ended search is make fuzz; what it finds goes into the seed corpus with the fix.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
secs=${FUZZ_SECONDS:-20}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$BUILD/fuzz/artifacts"
# The kernels a harness compiles (fuzz_warp's warm-up set, ...) are kept for its next run, in a cache of
# its own: harnesses run side by side (tests/run.sh), and one must not find what another happened to
# compile first, or its inputs would depend on the timing.
kcache=${WARPD_FUZZ_CACHE:-$BUILD/fuzz/kcache}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
runs_for() { # inputs per harness with FUZZ_FIXED=1: about 3 s each on the 2-core CI machine (about a tenth
  # of the first counts: the data families' tests, then the resident kernels' checks, took the suite past
  # its 8 minutes; each harness still replays its whole seed corpus first, and make fuzz searches on)
  case $1 in
    fuzz_base64) echo 300000 ;; fuzz_data) echo 180000 ;; fuzz_expr) echo 30000 ;;
    fuzz_jobs) echo 55000 ;; fuzz_json) echo 55000 ;; fuzz_url) echo 1200 ;; fuzz_shm) echo 30000 ;; fuzz_users) echo 30000 ;;
    *) echo 85000 ;;
  esac
}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for b in "$BUILD"/fuzz/fuzz_*; do [ -x "$b" ] && [ -f "$b" ] && [[ "$b" != *.o && "$b" != *.d ]] && names+=("$(basename "$b")"); done
fi
# No harness built is a failure, not an empty pass (make test builds them: FUZZ_BIN).
[ ${#names[@]} -gt 0 ] || { echo "!! no harness in $BUILD/fuzz (make test-fuzz builds them)"; fail=1; }
for name in "${names[@]}"; do
  bin="$BUILD/fuzz/$name"; seeds="tests/fuzz/corpus/${name#fuzz_}"
  dict=; [ -f "tests/fuzz/${name#fuzz_}.dict" ] && dict="-dict=tests/fuzz/${name#fuzz_}.dict"
  mkdir -p "$tmp/$name" "$kcache/$name"
  if [ "${FUZZ_FIXED:-0}" = 1 ]; then limit="-runs=$(runs_for "$name") -seed=1"; else limit="-max_total_time=$secs"; fi
  WARPD_FUZZ_CACHE="$kcache/$name" "$bin" $limit -timeout=20 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$BUILD/fuzz/artifacts/$name-" $dict ${FUZZ_ARGS:-} "$tmp/$name" "$seeds" >"$tmp/log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/log" | tail -n 1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$tmp/log" | tail -n 1)
  if [ $rc -eq 0 ]; then
    pass=$((pass+1)); echo "ok   $name: ${execs:-?} executions in ${took:-$secs} s"
  else
    fail=$((fail+1)); echo "FAIL $name (exit $rc, ${execs:-?} executions):"; grep -v '^#\|^INFO\|^stat::' "$tmp/log" | tail -n 40
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ $fail -eq 0 ]
