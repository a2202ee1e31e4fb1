# prewarm — one call on the GPU machine: `warpd --prewarm SET --exit` cold (empty cache directory) for an old
# build and the current one, alternating variants round by round so drift hits them alike; prints one
# line per run and a table of the medians (each round starts at a different variant). The old tree is OLD (a copy of an earlier commit, built
# here too); variants are "name|env|binary|args" lines in VARIANTS (default: below).
#   OLD=old bench/gpu.sh prewarm [SET.json] [ROUNDS]
#   OLD_PATCH=old.patch bench/gpu.sh prewarm   (OLD made here: this tree with the patch reversed,
#                                               e.g. git diff OLD_COMMIT HEAD -- server kernels)
# Without OLD or OLD_PATCH only this build runs (the cold prewarm's spread alone).
set_file=${1:-prewarm/default.json}; rounds=${2:-3}
OLD=${OLD:-}
if [ -n "${OLD_PATCH:-}" ]; then
  OLD=/tmp/warpd-old; rm -rf "$OLD"; mkdir -p "$OLD"
  tar --exclude=./build --exclude=./.debs -cf - . | (cd "$OLD" && tar xf -)
  (cd "$OLD" && patch -s -R -p1 <"$OLDPWD/$OLD_PATCH") || { echo "cannot reverse $OLD_PATCH"; exit 1; }
fi
make -j16 build/warpd >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
if [ -n "$OLD" ]; then (cd "$OLD" && make -j16 build/warpd >"$OUT/build-old.log" 2>&1) || { tail -30 "$OUT/build-old.log"; exit 1; }; fi
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); commit ${WARPD_COMMIT:-?}; THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null); load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$OLD" ]; then
  VARIANTS=${VARIANTS:-"old||$OLD/build/warpd|
new||build/warpd|"}
else
  VARIANTS=${VARIANTS:-"new||build/warpd|"}
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
declare -A walls comps
mapfile -t lines < <(grep . <<<"$VARIANTS")
for r in $(seq "$rounds"); do
  for i in "${!lines[@]}"; do # round r starts at its r-th variant: no variant always runs first
    IFS='|' read -r name envs bin args <<<"${lines[$(((i + r - 1) % ${#lines[@]}))]}"
    [ -n "$name" ] || continue
    rm -rf "$tmp/c"
    t0=$(date +%s.%N)
    env $envs "$bin" --cache-dir "$tmp/c" --prewarm "$set_file" --exit $args >"$tmp/out" 2>"$tmp/err"; rc=$?
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
    comp=$(sed -n 's/.* in \([0-9.]*\) s on.*/\1/p' "$tmp/out")
    walls[$name]+="$wall "; comps[$name]+="$comp "
    printf 'round %d %-12s wall %s s compiling %s s rc %d  %s\n' "$r" "$name" "$wall" "$comp" $rc "$(du -sh "$tmp/c" | cut -f1)"
    [ $rc -eq 0 ] || tail -3 "$tmp/err"
    [ "$r" = 1 ] && grep -h 'prewarm: .* took' "$tmp/err" >"$OUT/trace-$name.txt" 2>/dev/null
  done
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo; echo "| variant | wall (runs) | median wall | compiling (runs) |"; echo "| --- | --- | --- | --- |"
while IFS='|' read -r name _ _ _; do
  [ -n "$name" ] || continue
  echo "| $name | ${walls[$name]}| $(echo "${walls[$name]}" | med) | ${comps[$name]}|"
done <<<"$VARIANTS"
