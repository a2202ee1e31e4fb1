#!/bin/sh
# Liveness, then readiness (a backend is up): GET /v1/health, GET /v1/ready
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -fsS "$@" "$WARPD/v1/health" && echo && curl -fsS "$@" "$WARPD/v1/ready" && echo
