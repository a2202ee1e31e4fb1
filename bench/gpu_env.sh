# gpu_env.sh — sourced by the bench/gpu_*.sh scripts: the GPU machine has no package registry, so the
# carried .debs (libmicrohttpd, cJSON) are unpacked and put on the compiler's paths; $OUT is made; the
# card is named. Run from the repository root.
OUT=${OUT:-/tmp/warpd-gpu-out}; mkdir -p "$OUT"
if [ -d .debs ]; then
  mkdir -p /tmp/deps && for f in .debs/*.deb; do dpkg -x "$f" /tmp/deps; done
  export CPATH=/tmp/deps/usr/include LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
