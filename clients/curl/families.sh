#!/bin/sh
# Every kernel family with its types, widths, arguments, operators and backends: GET /v1/families
WARPD=${WARPD:-http://127.0.0.1:8080}
curl -fsS "$WARPD/v1/families" && echo
