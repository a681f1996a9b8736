#!/usr/bin/env bash
# Runs every environment-gated integration test of the module (tests named *Integration* or *Live*)
# against the salt-master that the ODUFLOW_SALT_* variables name: the lab
# (eval "$(bash saltlab.sh env)"), the compose harness (--env-file examples/harness/harness.env)
# or a master you already run. Refuses, with exit status 2, when no master is named.
#
# Usage: bash examples/harness/run-integration.sh [--env-file FILE] [extra go test flags]
#   e.g. bash examples/harness/run-integration.sh -run 'Integration.*Ping' -timeout 20m
# A later -run overrides the default -run 'Integration|Live'. No make needed; only Go.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "run-integration: $*" >&2; exit 2; }

env_file=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --env-file) [ $# -ge 2 ] || die "--env-file needs a file"; env_file=$2; shift 2 ;;
    --env-file=*) env_file=${1#--env-file=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done

if [ -n "$env_file" ]; then
  [ -r "$env_file" ] || die "cannot read env file $env_file"
  HARNESS_DIR=$(cd "$(dirname "$env_file")" && pwd)
  export HARNESS_DIR
  set -a
  # shellcheck disable=SC1090
  . "$env_file"
  set +a
fi

missing=()
for v in ODUFLOW_SALT_MASTER ODUFLOW_SALT_EVENTS ODUFLOW_SALT_MINION; do
  [ -n "${!v:-}" ] || missing+=("$v")
done
if [ -z "${ODUFLOW_SALT_KEY_FILE:-}" ] &&
   { [ -z "${ODUFLOW_SALT_EAUTH:-}" ] || [ -z "${ODUFLOW_SALT_USER:-}" ] || [ -z "${ODUFLOW_SALT_PASSWORD:-}" ]; }; then
  missing+=("ODUFLOW_SALT_KEY_FILE or ODUFLOW_SALT_EAUTH+ODUFLOW_SALT_USER+ODUFLOW_SALT_PASSWORD")
fi
if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "run-integration: no salt-master is named; refusing to run."
    printf '  missing: %s\n' "${missing[@]}"
    echo "  set them (lab: eval \"\$(bash saltlab.sh env)\"), or pass --env-file examples/harness/harness.env"
    echo "  after 'docker compose -f examples/harness/compose.yaml up -d'. See examples/harness/README.md."
  } >&2
  exit 2
fi

echo "run-integration: master ${ODUFLOW_SALT_MASTER}, events ${ODUFLOW_SALT_EVENTS}, minion ${ODUFLOW_SALT_MINION}" >&2
if [ -n "${ODUFLOW_SALT_KEY_FILE:-}" ] && [ ! -r "$ODUFLOW_SALT_KEY_FILE" ]; then
  echo "run-integration: warning: key file $ODUFLOW_SALT_KEY_FILE is not readable by $(id -un) (user-key tests will fail or skip)" >&2
fi

cd "$here/../.."
# -p 1: the packages' integration tests share one master and one minion; run them one package at a time
# (the minion's execution lock would otherwise refuse overlapping runs).
exec go test -p 1 -run 'Integration|Live' -count=1 -v "${args[@]}" ./...
