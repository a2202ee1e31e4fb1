#!/usr/bin/env bash
# Transport tests, the event loops: the whole API case table (tests/api/cases/) on one HTTP event loop
# that never busy-polls, on loops that poll for a second, and on libmicrohttpd's pool; the busy-poll
# flag's bounds. (TLS and the Unix socket: transport_tls.sh.) Each daemon is the sanitized build and must
# exit cleanly with no sanitizer report. Ends with "transport: N passed, N failed".
. "$(dirname "$0")/transport_lib.sh"

# ---- the HTTP threads' event loops (http_loop.c): one loop that sleeps at once, so that every
# deferred reply comes through its wake; libmicrohttpd's own pool instead; the flag's bounds
for flags in "--threads 1 --busy-poll-us 0" "--threads 3 --busy-poll-us 1000000" "--threads 4 --listen-pool"; do
  # shellcheck disable=SC2086
  if start --cache-dir "$tmp/cache" $flags; then
    "$BUILD/asan/tests/api/api_runner" "$url" "${cases[@]}" >"$tmp/r" 2>&1
    grep -E '^FAIL|passed' "$tmp/r"; count "$tmp/r" "the runner ($flags)"
    stop
  fi
done
refused "--busy-poll-us -1" "--busy-poll-us needs a number in 0..1000000" --busy-poll-us -1
refused "--busy-poll-us past a second" "--busy-poll-us needs a number in 0..1000000" --busy-poll-us 1000001

echo "transport: $pass passed, $fail failed"
[ $fail -eq 0 ]
