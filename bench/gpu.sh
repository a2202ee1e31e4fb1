#!/usr/bin/env bash
# gpu.sh — the one entry point for benchmarks and checks on the GPU machine: bench/gpu.sh TASK [args].
# Checks that a GPU answers, unpacks the carried .debs and sets the compiler's paths (bench/lib/gpu_tasks.sh),
# then runs bench/gpu/TASK.sh in this shell, from the repository root. Logs go to $OUT
# (/tmp/warpd-gpu-out). `bench/gpu.sh` or `bench/gpu.sh help` lists the tasks; `help TASK` prints a
# task's own notes (its options and environment variables). Results are kept in bench/RESULTS.md.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

# name | arguments | what it does (one line each; the task's file has the rest)
gpu_tasks=(
  "build|[targets...]|build warpd, the ASan daemon, every tests/gpu program (and the targets given)"
  "make|[test|bench|all]|make test-gpu and/or make bench, then a short summary"
  "check|[quick|tests|reduce|perf]|the tree in 10-minute calls: quick (capped tests, engine, bench_reduce, prewarm), all tests, test_gpu_reduce, perf"
  "engine|(ENGINES=... CONNS=...)|wrk at 1/16/64/256 connections on a cached reduce and warp, per engine flags"
  "p50|(STARTS= MODES=...)|one connection's p50 (health, reduce, warp) over daemon starts, free and pinned"
  "prof|(FLAGS= NO_PERF=1)|one connection's p50, the server's own timing fields, a perf profile of the daemon"
  "untimed||small jobs without timing events: test_gpu_batch, latency.py, bench_smalljob, the engine table"
  "zerocopy||zero-copy small jobs on and off: tests, one connection's p50, the engine table"
  "multi|(on 2+ GPUs)|sharded and per-device buffers: 2^31 reduce speed-up, concurrent reduces, 1 GiB uploads"
  "upload|(CONN_MEMORY=...)|1 GiB raw PUT /v1/buffers to device 0 per --conn-memory, GB/s"
  "shm|(SHM_BYTES= RUNS=)|1 GiB f32 in a registered region reduced, against HTTP and the pinned copy; IPC"
  "families|(SKIP=bench)|stats, map, anywidth, bykey, hist in ~6 minutes: the cuda = emu tests (quick), benches at 2^24..2^28"
  "ipclat|(FLAGSETS= N=)|a repeated CUDA IPC reduce from Python taken apart: client phases, bare socket, daemon, wrk"
  "hotpath|(MODES= FLAGS= PROFILE=1 STARTS=)|the request path table: nginx, health, tiny reduce and warp on cuda and emu at 1/64/256 connections, ratios"
  "reqab|(OLD_TGZ= ROUNDS= MODES=)|an older tree against this one: health, tiny reduce and warp at 256 connections, daemon starts alternating"
  "p50ab|(OLD_TGZ= ROUNDS= ORDER=)|an older tree against this one at one connection: wrk p50s and the answers' device_us, starts alternating"
  "flagab|(SETS= ROUNDS= MODES= D=)|daemon flag sets against each other: health, tiny reduce and warp at 256 connections, starts alternating"
  "perreq|(CASES= COMM= TOP=)|perf of the daemon under wrk at 256 connections as µs a request, by thread name and by symbol"
  "floor||loopback HTTP floor: nginx's fixed 200 and warpd's GET /v1/health at 1 and 256 connections"
  "threads|[warpd flags...]|CPU seconds per warpd thread name under wrk at 256 connections"
  "batch|[test|bench|all]|dynamic batching: test_gpu_batch and template checks, then bench_batch"
  "reduce|[test args...]|test_gpu_reduce, bench_reduce against CUB, bench_cupy.py and http_reduce.sh"
  "stats||statistics and norms: test_gpu_stats (cuda == emu), bench_stats against sum, CuPy's var/norm"
  "tune|(ONLY= REDUCE_SWEEP=...)|device_reduce or device_scan against CUB for the tree and each sweep setting"
  "scan|NAME=SCAN_CU...|A/B of templates/scan.cu variants: device_scan against CUB and the cold prewarm"
  "prewarm|[SET.json] [ROUNDS]|cold warpd --prewarm --exit, an OLD build against this one, alternating"
  "map|(MAX_LOG2=30)|transform-reduce: test_gpu_map, sum vs map x*x GB/s 2^24..2^30, dot 2^28 TB/s, CUB, CuPy"
  "anywidth|[test|bench|all]|warp_* at every width 1..32, block_* at any block: cuda = emu; time per element at widths 7, 8, 31, 32"
  "bykey||reduce_by_key: bench_bykey against CUB ReduceByKey (2^24..2^28), test_gpu_bykey (cuda == emu)"
  "hist|(FULL=1 ROUNDS=N)|histogram: test_gpu_hist, numpy on a cuda daemon, bench_hist against CUB, cp.histogram"
  "fair|(LOG2= CONNS= DURATION=)|two users: 64 conns of 2^26 f32 reduces vs one user's tiny reduce, its p50/p99 alone and with the flood"
)

gpu_usage() {
  echo "usage: bench/gpu.sh TASK [args]   (on the GPU machine; logs in \$OUT, default /tmp/warpd-gpu-out)"
  echo "       bench/gpu.sh help TASK     (the task's options and environment variables)"
  echo
  local row name args what
  for row in "${gpu_tasks[@]}"; do
    name=${row%%|*} what=${row##*|} args=${row#*|} args=${args%|*}
    printf '  %-9s %-26s %s\n' "$name" "$args" "$what"
  done
  echo
  echo "Every task needs a GPU (NO_GPU=1 skips the check, e.g. multi's emu dry run). Numbers: bench/RESULTS.md."
}

gpu_task_known() { # name
  local row
  for row in "${gpu_tasks[@]}"; do [ "${row%%|*}" = "$1" ] && return 0; done
  return 1
}

gpu_task=${1:-help}
[ $# -gt 0 ] && shift
case $gpu_task in
help | -h | --help)
  if [ $# -gt 0 ] && gpu_task_known "$1"; then # the task file's opening comment
    sed -n '1,/^[^#]/{/^# shellcheck/d;/^#/s/^# \{0,1\}//p}' "bench/gpu/$1.sh"
  else
    gpu_usage
  fi
  exit 0
  ;;
esac
gpu_task_known "$gpu_task" || { echo "bench/gpu.sh: no task '$gpu_task'" >&2; gpu_usage >&2; exit 2; }

# shellcheck source=bench/lib/gpu_tasks.sh
. bench/lib/gpu_tasks.sh
gpu_need_gpu "$gpu_task" || exit 2
gpu_env
# shellcheck source=/dev/null
. "bench/gpu/$gpu_task.sh" "$@"
