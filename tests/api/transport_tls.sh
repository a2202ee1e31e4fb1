#!/usr/bin/env bash
# Transport tests, TLS and the Unix socket: the whole API case table over HTTPS with a self-signed
# certificate (openssl) checked by curl --cacert, and over a Unix socket with curl --unix-socket (the
# runner's curl transport, tests/api/api_curl.h); the TLS flags' errors; the socket file's mode, its
# removal at exit, a stale one replaced, and a live one or a plain file left alone. Each daemon is the
# sanitized build and must exit cleanly with no sanitizer report. Ends with "transport_tls: N passed, N
# failed".
. "$(dirname "$0")/transport_lib.sh"

# ---- TLS
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>"$tmp/ossl" ||
  { bad "openssl could not make a certificate: $(cat "$tmp/ossl")"; }
refused "--tls-cert without --tls-key" "--tls-cert and --tls-key go together" --tls-cert "$tmp/cert.pem"
refused "an unreadable --tls-cert" "--tls-cert $tmp/missing.pem: cannot read it" --tls-cert "$tmp/missing.pem" --tls-key "$tmp/key.pem"
refused "a key given as --tls-cert" "--tls-cert $tmp/key.pem: not a PEM certificate" --tls-cert "$tmp/key.pem" --tls-key "$tmp/key.pem"
refused "a certificate given as --tls-key" "--tls-key $tmp/cert.pem: not a PEM private key" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/cert.pem"
if start --cache-dir "$tmp/cache" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem"; then
  check "the start-up line says https ($url)" '[[ "$url" == https://127.0.0.1:* ]]'
  "$BUILD/asan/tests/api/api_runner" --cacert "$tmp/cert.pem" "$url" "${cases[@]}" >"$tmp/r" 2>&1
  grep -E '^FAIL|passed' "$tmp/r"; count "$tmp/r" "the runner"
  rc=0; curl -s -o /dev/null "$url/v1/health" || rc=$?
  check "curl without --cacert refuses the self-signed certificate (exit $rc)" '[ $rc -eq 60 ]'
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port/v1/health")
  check "plain HTTP to the HTTPS port gets no answer (got '$code')" '[ "$code" != 200 ]'
  stop
fi

# ---- Unix socket
sock="$tmp/warpd.sock"
if start --cache-dir "$tmp/cache" --listen "unix:$sock"; then
  check "the start-up line says unix:$sock ($url)" '[ "$url" = "unix:$sock" ]'
  check "the socket file's mode is 600 ($(stat -c %a "$sock"))" '[ "$(stat -c %a "$sock")" = 600 ]'
  "$BUILD/asan/tests/api/api_runner" --unix-socket "$sock" http://localhost "${cases[@]}" >"$tmp/r" 2>&1
  grep -E '^FAIL|passed' "$tmp/r"; count "$tmp/r" "the runner"
  refused "a second daemon on a live socket" "another process is listening on $sock" --listen "unix:$sock"
  check "... leaves the first one serving" '[ "$(curl -s --unix-socket "$sock" http://localhost/v1/health)" = "{\"status\":\"ok\"}" ]'
  stop
  check "the socket file is gone after exit" '[ ! -e "$sock" ]'
fi
if start --listen "unix:$sock" --socket-mode 660 --no-disk-cache; then
  check "--socket-mode 660 gives mode $(stat -c %a "$sock")" '[ "$(stat -c %a "$sock")" = 660 ]'
  stop
fi
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()" "$sock" # stale: nobody listens
if start --listen "unix:$sock" --no-disk-cache; then
  check "a stale socket file is replaced" '[ "$(curl -s --unix-socket "$sock" http://localhost/v1/health)" = "{\"status\":\"ok\"}" ]'
  stop
fi
echo "not a socket" >"$sock"
refused "a plain file at the socket path" "exists and is not a socket" --listen "unix:$sock" --no-disk-cache
check "... is left alone" '[ "$(cat "$sock")" = "not a socket" ]'
rm -f "$sock"
refused "--socket-mode 999" "--socket-mode needs an octal mode" --listen "unix:$sock" --socket-mode 999

echo "transport_tls: $pass passed, $fail failed"
[ $fail -eq 0 ]
