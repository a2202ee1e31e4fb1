#!/usr/bin/env bash
# ab.sh — A/B variants of the kernels and their plans, built anywhere, run on the GPU machine. A variant
# is this working tree with one patch applied (none for the tree itself), built into build-ab/NAME with
# its templates found at the relative path build-ab/NAME/templates: build here (no GPU needed), carry
# build-ab to the GPU machine, and run the same program of every variant from the repository root,
# round after round, the variants alternating.
#   bench/ab.sh build NAME [PATCH|-] TARGET...   e.g. bench/ab.sh build i8 /tmp/i8.diff bench/reduce/bench_bykey
#   bench/ab.sh run ROUNDS PROGRAM "ARGS" NAME...  e.g. bench/ab.sh run 2 bench/reduce/bench_bykey "--log2 24,28" tree i8
# build-ab/NAME keeps only what a run needs: templates/, kernels/wp_abi.h and the TARGETs (build/...).
# run prints each variant's output under a "== NAME round R" line (also in $OUT/ab_NAME_R.log).
set -euo pipefail
cd "$(dirname "$0")/.."

ab_build() {
  local name=$1 patch=$2; shift 2
  local dest=build-ab/$name src
  src=$(mktemp -d)
  git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$src"
  if [ "$patch" != - ]; then (cd "$src" && patch -s -p1 <"$patch"); fi
  rm -rf "$dest"
  mkdir -p "$dest/kernels" "$dest/build"
  cp -r "$src/templates" "$dest/"
  cp "$src/kernels/wp_abi.h" "$dest/kernels/"
  local t targets=()
  for t in "$@"; do targets+=("build/$t"); done
  make -C "$src" -j"${JOBS:-2}" BUILD=build TEMPLATES_DIR="$dest/templates" "${targets[@]}" >"$dest/build.log" 2>&1 ||
    { tail -20 "$dest/build.log"; rm -rf "$src"; return 1; }
  for t in "$@"; do mkdir -p "$dest/build/$(dirname "$t")"; cp "$src/build/$t" "$dest/build/$t"; done
  rm -rf "$src"
  echo "build-ab/$name: $*"
}

ab_run() {
  local rounds=$1 prog=$2 args=$3 r name out=${OUT:-/tmp/warpd-gpu-out}; shift 3
  mkdir -p "$out"
  for r in $(seq "$rounds"); do
    for name in "$@"; do
      echo "== $name round $r"
      # shellcheck disable=SC2086 # ARGS is a word list
      timeout 300 "build-ab/$name/build/$prog" $args 2>&1 | tee "$out/ab_${name}_$r.log"
    done
  done
}

case "${1:-}" in
build) shift; ab_build "$@" ;;
run) shift; ab_run "$@" ;;
*) sed -n '2,10p' "$0" >&2; exit 2 ;;
esac
