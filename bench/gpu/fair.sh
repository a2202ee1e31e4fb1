# fair — two users on one daemon (bench/users/fair.sh): 64 connections of 2^26-element f32 reduces from one
# user against another user's 8-element reduces, three runs of 10 s: the tiny user alone, the flood
# alone, the flood with the tiny user; the tiny user's p50/p99 and the bound (one large job's p50 plus
# the tiny one's own). The numbers go in bench/RESULTS.md.
#   bench/gpu.sh fair   (LOG2=26 CONNS=64 DURATION=10; WARPD_FLAGS="..." for the daemon)
make -j16 "$BUILD/warpd" >/dev/null 2>&1 || { echo "build failed"; exit 1; }
bench/users/fair.sh "$@" 2>&1 | tee "$OUT/fair.txt"
