# gpu_lib.sh — sourced by bench/gpu_final.sh and bench/gpu_check.sh (run from the repository root,
# with BUILD, OUT and t0 set): the commit line, building the GPU programs, and running one program
# under a time cap.

gpu_commit_line() {
  echo "commit ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}  $(date -u +%FT%TZ)"
}

# Builds warpd, the ASan daemon and api_devices (tests/api/devices.sh --cuda), every tests/gpu program
# and the extra targets given; on failure prints the build log's end and returns 1.
gpu_build() { # extra make targets...
  local bins=() f b
  for f in tests/gpu/*.c tests/gpu/*.cu; do b=${f##*/}; bins+=("$BUILD/tests/gpu/${b%.*}"); done
  make -j16 "$BUILD/warpd" "$BUILD/asan/warpd" "$BUILD/asan/tests/api/api_devices" "${bins[@]}" "$@" \
    >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; return 1; }
  echo "built in $(( $(date +%s) - t0 )) s"
}

# Runs the command with its output in $OUT/NAME.log and prints one line (exit status, seconds, its
# "N passed, N failed" line) and its first failures. Past cap seconds it takes every thread's backtrace
# (cuda-gdb, into $OUT/NAME.bt: a hang and a slow run look alike from outside) and kills it.
capped() { # name cap_seconds command...
  local name=$1 cap=$2; shift 2
  local s=$(date +%s)
  "$@" >"$OUT/$name.log" 2>&1 &
  local pid=$! waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt "$cap" ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 $pid 2>/dev/null; then
    for p in $pid $(pgrep -P $pid); do
      timeout 60 cuda-gdb -batch -p "$p" -ex 'thread apply all bt' >>"$OUT/$name.bt" 2>&1
    done
    pkill -P $pid; kill -9 $pid 2>/dev/null
    echo "$name: STUCK or slow past ${cap} s ($(grep -c '^Thread' "$OUT/$name.bt") threads in $name.bt); last: $(grep -a progress "$OUT/$name.log" | tail -n 1)"
  fi
  wait $pid 2>/dev/null; local rc=$?
  printf '%-22s rc=%-3d %4d s  %s\n' "$name" $rc $(( $(date +%s) - s )) \
    "$(grep -aE '[0-9]+ passed, [0-9]+ failed' "$OUT/$name.log" | tail -n 1)"
  grep -aE 'FAIL|mismatch|SKIPPED|error:' "$OUT/$name.log" | head -4
}
