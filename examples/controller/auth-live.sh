#!/usr/bin/env bash
# auth-live.sh: checks a running controller's authentication (the compose stack, or any deployment).
#
#   . examples/harness/_state/controller/tokens.env      # ODUFLOW_CONTROLLER_ADMIN_TOKEN, _OBSERVER_TOKEN
#   bash examples/controller/auth-live.sh [URL [MINION]]  # default http://127.0.0.1:18080, the compose minion
#
# It checks, printing each result: a POST without a token is 401 (with WWW-Authenticate: Bearer), the
# observer's POST is 403, the administrator's configure start is 201 and is followed to succeeded. Exit 0
# when all pass, 1 otherwise, 2 without curl or the tokens.
set -euo pipefail
URL=${1:-http://127.0.0.1:18080}
MINION=${2:-client-7c9e6679-7425-40de-944b-e07fc1f90ae7}
TIMEOUT=${AUTH_LIVE_TIMEOUT:-120}
command -v curl >/dev/null || { echo "auth-live: SKIP: curl is not installed" >&2; exit 2; }
for v in ODUFLOW_CONTROLLER_ADMIN_TOKEN ODUFLOW_CONTROLLER_OBSERVER_TOKEN; do
  [ -n "${!v:-}" ] || { echo "auth-live: SKIP: $v is unset (. examples/harness/_state/controller/tokens.env)" >&2; exit 2; }
done
fail=0
say() { printf '[auth-live] %s\n' "$*"; }
check() { # check NAME WANT GOT
  if [ "$2" = "$3" ]; then say "PASS $1: $3"; else say "FAIL $1: got $3, want $2"; fail=1; fi
}
# call TOKEN METHOD PATH: prints "BODY STATUS" (the token through curl's stdin, never its argv).
call() {
  local tok=$1 method=$2 path=$3
  if [ -z "$tok" ]; then
    curl -s -o /dev/stdout -w ' %{http_code}' -X "$method" "$URL$path"
  else
    printf 'Authorization: Bearer %s\n' "$tok" | curl -s -o /dev/stdout -w ' %{http_code}' -X "$method" -H @- "$URL$path"
  fi
}
status_of() { printf '%s' "${1##* }"; }

start=/v1/requests/configure/$MINION
out=$(call "" POST "$start"); check "POST without a token" 401 "$(status_of "$out")"
www=$(curl -s -o /dev/null -D - -X POST "$URL$start" | tr -d '\r' | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: //p')
check "WWW-Authenticate" 'Bearer realm="oduflow"' "$www"
out=$(call "$ODUFLOW_CONTROLLER_OBSERVER_TOKEN" POST "$start"); check "observer POST" 403 "$(status_of "$out")"
out=$(call "$ODUFLOW_CONTROLLER_ADMIN_TOKEN" POST "$start"); check "administrator start" 201 "$(status_of "$out")"
rid=$(printf '%s' "$out" | sed -n 's/.*"request_id":"\([0-9a-f-]*\)".*/\1/p')
if [ -z "$rid" ]; then
  say "FAIL no request id in: $out"; exit 1
fi
say "request $rid"
deadline=$(( $(date +%s) + TIMEOUT )); st=""
while [ "$(date +%s)" -lt "$deadline" ]; do
  out=$(call "$ODUFLOW_CONTROLLER_OBSERVER_TOKEN" GET "$start/$rid")
  st=$(printf '%s' "$out" | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p')
  case "$st" in succeeded|failed|unknown) break ;; esac
  sleep 1
done
check "administrator apply, read by the observer" succeeded "$st"
[ "$fail" = 0 ] && say "PASS" || say "FAIL"
exit "$fail"
