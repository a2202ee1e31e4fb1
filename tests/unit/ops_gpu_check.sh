#!/usr/bin/env bash
# ops_gpu_check.sh — proves templates/wp_ops.cuh and kernels/expr.c compute the same bits: generates the
# expression functors with expr.c (tests/unit/ops_gpu_cases.c), builds tests/unit/ops_gpu_check.cu
# and, unless --build-only, runs it (needs a GPU). Output and binaries go to $BUILD/ops_gpu/.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}; CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}; ARCH=${ARCH:-sm_90}
out="$BUILD/ops_gpu"; mkdir -p "$out"
CFLAGS=(-std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -ffp-contract=off -O2 -I. -Iserver -Ikernels)
srcs=(kernels/expr.c kernels/expr_parse.c kernels/expr_text.c kernels/types.c server/util/common.c)
gcc "${CFLAGS[@]}" tests/unit/ops_gpu_cases.c "${srcs[@]}" -lm -o "$out/ops_gpu_cases"
"$out/ops_gpu_cases" > "$out/ops_gpu_cases.inc"
objs=()
for s in "${srcs[@]}"; do o="$out/$(basename "${s%.c}").o"; gcc "${CFLAGS[@]}" -c "$s" -o "$o"; objs+=("$o"); done
# --fmad=false as the daemon compiles; wp_ops.cuh does not rely on it (it uses __fadd_rn & co).
"$CUDA_HOME/bin/nvcc" -std=c++17 -O2 -arch="$ARCH" --fmad=false -DWP_NEED_FP16 -I. -Iserver -Ikernels -Itemplates \
    -DWP_GPU_CASES_FILE="\"$out/ops_gpu_cases.inc\"" -Xcompiler -fopenmp \
    tests/unit/ops_gpu_check.cu "${objs[@]}" -lm -lgomp -o "$out/ops_gpu_check"
[ "${1:-}" = --build-only ] && exit 0
"$out/ops_gpu_check"
