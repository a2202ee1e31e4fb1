# p50ab — one connection, an older tree against this one: daemon starts alternating (old, new, old, new,
# ...) on cuda; each start gives wrk's p50 at one connection for health, the tiny reduce and the tiny warp
# (two cells a route) and the answers' own medians (bench/http/latency.py: device_us, total_us). The
# old tree travels as reqab's does: `git archive OLD | gzip > bench/old.tgz` (git-ignored: name it in
# carry), built in /tmp/old.
#   bench/gpu.sh p50ab  (OLD_TGZ=bench/old.tgz; ROUNDS=2; ORDER="old new"; D=3; LAT_N=2000; FLAGS="")
gpu_old_and_new p50ab || exit $?
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
gpu_tiny_scripts "$tmp"
p50() { # route: two cells, "a/b" µs
  local out=
  for _ in 1 2; do
    out+="${out:+/}$("$WRK" -t1 -c1 -d"${D:-3}s" --latency -s "$tmp/$1.lua" "$base/v1/$1" 2>&1 |
      awk '$1=="50%" {v=$2; if (v ~ /ms$/) {sub("ms","",v); v*=1000} else sub("us","",v); printf "%.1f", v}')"
  done
  echo "$out"
}
med() { # route field: the answers' median of a timing field (latency.py's output in $tmp/lat)
  awk -v r="$1" -v f="$2" '$1==r {getline; for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) print substr($i, length(f) + 2)}' "$tmp/lat"
}
tot() { awk -v r="$1" '$1==r {gsub(/\)/, "", $NF); print $NF}' "$tmp/lat"; } # route: its total_us median
echo "| round | tree | health p50 µs | reduce p50 µs | warp p50 µs | reduce device_us / total_us | warp device_us / total_us |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for r in $(seq "${ROUNDS:-2}"); do
  for v in ${ORDER:-old new}; do
    b=$BUILD
    [ "$v" = old ] && b=/tmp/old/build
    # shellcheck disable=SC2086 # FLAGS: words
    BUILD=$b gpu_tiny_start "$tmp" ${FLAGS:-}
    h=$(p50 health) a=$(p50 reduce) w=$(p50 warp)
    python3 bench/http/latency.py "${base##*:}" "${LAT_N:-2000}" >"$tmp/lat" 2>&1
    cp "$tmp/lat" "$OUT/lat_${r}_$v.txt"
    gpu_tiny_stop
    echo "| $r | $v | $h | $a | $w | $(med reduce device_us) / $(tot reduce) | $(med warp device_us) / $(tot warp) |"
  done
done
