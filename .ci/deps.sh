#!/usr/bin/env bash
# Installs what the build needs when it is missing: Debian dev packages through apt-get (as root or
# with sudo). Does nothing when the headers are already found (pkg-config, or CPATH on the GPU machine).
set -euo pipefail
have_hdr() { echo "#include <$1>" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
missing=()
# Test tools: the Debian package suite (tests/package), the Python client with and without numpy and
# its pip install (tests/clients), replicas behind nginx (tests/scale).
command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
command -v lintian >/dev/null || missing+=(lintian)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v man >/dev/null || missing+=(man-db)
[ -x /usr/sbin/nginx ] || missing+=(nginx)
[ -x /usr/bin/python3 ] || missing+=(python3)
pymod() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $1" 2>/dev/null; }
pymod numpy || missing+=(python3-numpy)
pymod ensurepip || missing+=(python3-venv)
pymod setuptools || missing+=(python3-setuptools)
pymod wheel || missing+=(python3-wheel)
have_hdr microhttpd.h || missing+=(libmicrohttpd-dev)
have_hdr cjson/cJSON.h || missing+=(libcjson-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v curl >/dev/null || missing+=(curl)
command -v clang-format >/dev/null || missing+=(clang-format)
# make fuzz / make test: libFuzzer harnesses need clang and its runtime (libFuzzer, ASan, UBSan)
command -v clang >/dev/null || missing+=(clang)
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' |
  clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1 || missing+=(libclang-rt-dev)
command -v openssl >/dev/null || missing+=(openssl) # tests/api/transport.sh: a self-signed certificate
# The web and lint suites (tests/web, tests/lint): node and npm for their npm packages (playwright-core,
# axe-core, swagger-parser, redocly), Debian's chromium for the browser, promtool (prometheus) for /metrics.
# A nodejs from elsewhere (NodeSource) brings its own npm, so npm only when the command is missing.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v promtool >/dev/null || missing+=(prometheus)
# Benchmarks only (bench/http/wrk_soak.sh runs this with WARPD_BENCH_DEPS=1): not needed by make test.
[ "${WARPD_BENCH_DEPS:-0}" = 1 ] && ! command -v wrk >/dev/null && missing+=(wrk)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ -f "$CUDA_HOME/include/nvrtc.h" ] || { echo "deps: NVRTC not found under CUDA_HOME=$CUDA_HOME (set CUDA_HOME)"; exit 1; }
exit 0
