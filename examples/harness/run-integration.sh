#!/usr/bin/env bash
# Runs the module's environment-gated integration tests against a real Salt master.
#
# Usage: bash examples/harness/run-integration.sh [--env-file FILE] [--all] [extra go test flags]
#        bash examples/harness/run-integration.sh --compose [--keep] [--gentle] [extra go test flags]
#        bash examples/harness/run-integration.sh --up | --down
#        bash examples/harness/run-integration.sh --both [--all] [extra go test flags]
#        bash examples/harness/run-integration.sh --matrix [--labs FILE] [--quick] [--disruptive]
#
# Without --compose: against whichever master the ODUFLOW_SALT_* variables name (the lab:
# eval "$(bash saltlab.sh env)", or --env-file FILE); refuses, with exit status 2, when none is
# named. Runs the tests named *Integration* or *Live* (go test -p 1 -run 'Integration|Live' -v);
# --all runs the whole suite instead (go test -race -p 1 ./...). A later -run overrides the filter.
#
# --both runs it on two labs one after the other: the Salt 3006.0 lab, then the later Salt lab.
# SALTLAB_KITS names their kits (default: "saltlab.sh saltlab-next.sh" in SALTLAB_KIT_DIR, else
# on PATH); each lab's variables come from `bash <kit> env`, in a clean environment (no
# ODUFLOW_SALT_* inherited), with ODUFLOW_SALTLAB_SH=<kit> for the tests that restart its minion
# and ODUFLOW_RECEIPT_DIR=<the lab minion's oduflow_receipt_dir>, when its config sets one.
# One summary line per lab; the exit status is the first failure's.
#
# --matrix runs the live checks on every lab of a lab list (FILE, else $SALTLAB_LABS; lines
# `NAME KIT [VAR=VALUE...]`) and prints a table version x check: matrix.sh, whose header lists the
# checks. Exit status 1 when any check of any lab failed.
#
# --compose drives the containers of compose.yaml (image: build-images.sh): a fresh _state/,
# `podman-compose up -d`, waits for the minion, exports harness.env, runs the whole suite
# (go test -race -count=1 -p 1 ./..., its integration tests included), then `down -v` and removes
# _state/ (--keep leaves both). The restart steps of the live receipt test run too, on the
# containers (compose-kit.sh); --gentle skips them. --up does the first half and prints how to
# run the tests; --down the last. COMPOSE (default podman-compose, else docker compose) and
# ENGINE (podman or docker) choose the tools. No make needed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() { sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "run-integration: $*" >&2; exit 2; }
say() { echo "run-integration: $*" >&2; }
now() { date +%s; }

if [ "${1:-}" = --matrix ]; then
  shift
  exec bash "$here/matrix.sh" "$@"
fi

env_file=""
mode=direct
all=0
keep=0
gentle=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --env-file) [ $# -ge 2 ] || die "--env-file needs a file"; env_file=$2; shift 2 ;;
    --env-file=*) env_file=${1#--env-file=}; shift ;;
    --compose) mode=compose; shift ;;
    --up) mode=up; shift ;;
    --down) mode=down; shift ;;
    --both) mode=both; shift ;;
    --all) all=1; shift ;;
    --keep) keep=1; shift ;;
    --gentle) gentle=1; shift ;;
    *) args+=("$1"); shift ;;
  esac
done

# --- the containers -------------------------------------------------------------------------

state="$here/_state"
project=oduflow-harness
master_ctr=oduflow-harness-salt-master
minion_ctr=oduflow-harness-salt-minion
SALT_IMAGE=${SALT_IMAGE:-localhost/oduflow-harness/salt:3006.0}
export SALT_IMAGE
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}

compose_tools() {
  if [ -z "${COMPOSE:-}" ]; then
    if command -v podman-compose >/dev/null; then COMPOSE=podman-compose
    elif command -v docker >/dev/null && docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
    else die "neither podman-compose nor docker compose is installed"
    fi
  fi
  if [ -z "${ENGINE:-}" ]; then
    case "$COMPOSE" in docker*) ENGINE=docker ;; *) ENGINE=podman ;; esac
  fi
  export ENGINE
}

compose_log=${COMPOSE_LOG:-${TMPDIR:-/tmp}/oduflow-harness-compose.log}
compose() { # compose ARGS...: COMPOSE on compose.yaml, project oduflow-harness; its chatter to compose_log
  echo "+ $COMPOSE -p $project -f compose.yaml $*" >> "$compose_log"
  # shellcheck disable=SC2086
  if ! (cd "$here" && $COMPOSE -p "$project" -f compose.yaml "$@") >> "$compose_log" 2>&1; then
    tail -n 30 "$compose_log" >&2
    say "$COMPOSE $* failed (the whole output: $compose_log)"
    return 1
  fi
}

harness_env() { # exports harness.env with HARNESS_DIR set
  HARNESS_DIR=$here
  export HARNESS_DIR
  set -a
  # shellcheck disable=SC1091
  . "$here/harness.env"
  set +a
}

compose_prepare() { # a fresh _state/: file roots (roles, module), the salt CLI wrapper
  if $ENGINE container inspect "$master_ctr" >/dev/null 2>&1 || $ENGINE container inspect "$minion_ctr" >/dev/null 2>&1; then
    say "containers of an earlier run exist; taking them down first"
    compose_down
  fi
  rm -rf "$state"
  mkdir -p "$state"/{salt/roles,salt/_modules,run/master,cache/master,cache/minion,pki/master,logs,receipts,out,bin}
  chmod 0700 "$state/receipts"
  install -m 0644 "$here"/salt/roles/*.sls "$state/salt/roles/"
  (cd "$root" && go run ./examples/oduflowctl module --install "$state/salt/_modules") >/dev/null
  # Salt's own CLI, in the master container (SALTLAB_DIR/bin/salt for the tests that compare
  # with it).
  printf '#!/bin/sh\nexec %s exec %s salt "$@"\n' "$ENGINE" "$master_ctr" > "$state/bin/salt"
  chmod 0755 "$state/bin/salt"
  controller_auth
}

controller_auth() { # the controller's token file (0600: it refuses a readable one), client bindings, tokens
  local d="$state/controller" admin observer
  mkdir -p "$d" && chmod 0700 "$d"
  admin=$(head -c 32 /dev/urandom | base64 | tr -d '/+=')
  observer=$(head -c 32 /dev/urandom | base64 | tr -d '/+=')
  (umask 077
   printf 'harness-admin administrator harness %s\nharness-observer observer harness %s\n' \
     "$(printf %s "$admin" | sha256sum | cut -d' ' -f1)" "$(printf %s "$observer" | sha256sum | cut -d' ' -f1)" >"$d/tokens"
   printf 'export ODUFLOW_CONTROLLER_ADMIN_TOKEN=%s\nexport ODUFLOW_CONTROLLER_OBSERVER_TOKEN=%s\n' "$admin" "$observer" >"$d/tokens.env")
  printf '%s harness\n' "${ODUFLOW_SALT_MINION:-client-7c9e6679-7425-40de-944b-e07fc1f90ae7}" >"$d/clients"
  chmod 0600 "$d/tokens" "$d/tokens.env"
  chmod 0644 "$d/clients"
}

minion_pings() {
  $ENGINE exec "$master_ctr" salt "$ODUFLOW_SALT_MINION" test.ping --out=txt -t 5 2>/dev/null | grep -q ': True'
}

compose_wait() { # until the minion answers test.ping through the master, the key and bus exist
  local i
  for i in $(seq 1 90); do
    if [ -S "$state/run/master/master_event_pub.ipc" ] && [ -s "$state/cache/master/.root_key" ] && minion_pings; then
      return 0
    fi
    sleep 2
  done
  $ENGINE logs --tail 30 "$master_ctr" >&2 || true
  $ENGINE logs --tail 30 "$minion_ctr" >&2 || true
  die "the minion did not answer test.ping within 180 s (logs above, and $state/logs/)"
}

compose_up() {
  local t
  if [ "$ENGINE" = podman ] && ! podman image exists "$SALT_IMAGE"; then
    case "$SALT_IMAGE" in
      localhost/*) die "no image $SALT_IMAGE: run bash examples/harness/build-images.sh first (README.md)" ;;
    esac
  fi
  compose_prepare
  t=$(now)
  compose up -d
  up_s=$(( $(now) - t ))
  t=$(now)
  harness_env
  compose_wait
  wait_s=$(( $(now) - t ))
  say "up in ${up_s}s; the minion answered test.ping ${wait_s}s later ($ENGINE, $SALT_IMAGE)"
}

compose_down() {
  compose down -v || true
  # podman-compose 1.0 leaves the project's network behind (docker compose removes it).
  if [ "$ENGINE" = podman ] && podman network exists "${project}_default" 2>/dev/null; then
    podman network rm "${project}_default" >> "$compose_log" 2>&1 || true
  fi
  rm -rf "$state"
}

case "$mode" in
  up|down|compose) compose_tools ;;
esac

# --- both labs, one after the other -----------------------------------------------------------

find_kit() { # find_kit NAME: the kit's path
  local k=$1
  case "$k" in */*) [ -r "$k" ] && { echo "$k"; return; } ;; esac
  if [ -n "${SALTLAB_KIT_DIR:-}" ] && [ -r "$SALTLAB_KIT_DIR/$k" ]; then echo "$SALTLAB_KIT_DIR/$k"; return; fi
  command -v "$k" 2>/dev/null && return
  die "lab kit $k not found (set SALTLAB_KITS to the kits' paths, or SALTLAB_KIT_DIR)"
}

run_both() {
  local kits kit path status=0 rc out lab passed skipped failed t summary=()
  read -r -a kits <<< "${SALTLAB_KITS:-saltlab.sh saltlab-next.sh}"
  [ ${#kits[@]} -ge 1 ] || die "SALTLAB_KITS is empty"
  for kit in "${kits[@]}"; do
    path=$(find_kit "$kit")
    if ! out=$(bash "$path" env 2>&1); then
      die "bash $path env failed: $out"
    fi
    lab=$(basename "$path" .sh)
    log=${TMPDIR:-/tmp}/oduflow-harness-$lab.$(date +%Y%m%dT%H%M%S).log
    say "=== $lab ($path) ==="
    t=$(now)
    rc=0
    # a clean environment per lab: nothing of the other lab's ODUFLOW_SALT_* survives
    # shellcheck disable=SC2046
    env $(env | sed -n 's/^\(ODUFLOW_SALT[A-Z_]*\)=.*/-u \1/p') bash -c '
      set -e
      eval "$1"
      export ODUFLOW_SALTLAB_SH="$2"
      # the minion receipt store the lab configured (oduflow_receipt_dir), for the tests that read it
      conf=${ODUFLOW_SALTLAB_DIR:-}/etc/minion
      if [ -z "${ODUFLOW_RECEIPT_DIR:-}" ] && [ -r "$conf" ]; then
        d=$(sed -n "s/^oduflow_receipt_dir:[[:space:]]*//p" "$conf" | tail -1)
        [ -z "$d" ] || export ODUFLOW_RECEIPT_DIR="$d"
      fi
      shift 2
      exec bash "$@"' run-both "$out" "$path" "${BASH_SOURCE[0]}" "${pass_args[@]}" > "$log" 2>&1 || rc=$?
    passed=$(grep -cE '^--- PASS: \S*(Integration|Live)' "$log" || true)
    skipped=$(grep -cE '^--- SKIP: \S*(Integration|Live)' "$log" || true)
    failed=$(grep -cE '^--- FAIL: \S*(Integration|Live)' "$log" || true)
    grep -E '^(ok|FAIL|panic:)\s|^--- FAIL' "$log" >&2 || true
    summary+=("$lab: exit $rc in $(( $(now) - t ))s; live tests: $passed passed, $skipped skipped, $failed failed (log: $log)")
    say "${summary[-1]}"
    [ "$status" != 0 ] || status=$rc
  done
  printf 'run-integration: %s\n' "${summary[@]}" >&2
  return "$status"
}

if [ "$mode" = both ]; then
  [ -z "$env_file" ] || die "--both takes each lab's variables from its kit; no --env-file"
  pass_args=()
  [ "$all" = 0 ] || pass_args+=(--all)
  pass_args+=("${args[@]}")
  status=0
  run_both || status=$?
  exit "$status"
fi
case "$mode" in
  up)
    compose_up
    cat >&2 <<EOF
run-integration: the containers are up. Run the tests with
  bash examples/harness/run-integration.sh --env-file examples/harness/harness.env [--all]
and stop them with
  bash examples/harness/run-integration.sh --down
EOF
    exit 0 ;;
  down)
    compose_down
    say "down"
    exit 0 ;;
  compose)
    [ -z "$env_file" ] || die "--compose uses harness.env; no --env-file"
    all=1
    started=$(now)
    compose_up
    if [ "$keep" = 0 ]; then trap 'compose_down; say "down -v done"' EXIT; fi
    if [ "$gentle" = 0 ]; then
      export ODUFLOW_LAB_DISRUPTIVE=1 ODUFLOW_SALTLAB_SH="$here/compose-kit.sh"
    fi ;;
  direct)
    if [ -n "$env_file" ]; then
      [ -r "$env_file" ] || die "cannot read env file $env_file"
      HARNESS_DIR=$(cd "$(dirname "$env_file")" && pwd)
      export HARNESS_DIR
      set -a
      # shellcheck disable=SC1090
      . "$env_file"
      set +a
    fi ;;
esac

# --- the tests ------------------------------------------------------------------------------

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
    echo "  set them (lab: eval \"\$(bash saltlab.sh env)\"), pass --env-file examples/harness/harness.env"
    echo "  after 'run-integration.sh --up', or run the containers with --compose. See examples/harness/README.md."
  } >&2
  exit 2
fi

say "master ${ODUFLOW_SALT_MASTER}, events ${ODUFLOW_SALT_EVENTS}, minion ${ODUFLOW_SALT_MINION}"
if [ -n "${ODUFLOW_SALT_KEY_FILE:-}" ] && [ ! -r "$ODUFLOW_SALT_KEY_FILE" ]; then
  say "warning: key file $ODUFLOW_SALT_KEY_FILE is not readable by $(id -un) (user-key tests will fail or skip)"
fi

cd "$root"
# The packages of the library's module and of the two modules split from it (the etcd store, and the
# examples with oduflowctl's integration test); the go.work at the root builds them from the working copy.
pkgs=(./... ./oduflow/etcdstore/... ./examples/...)
# -p 1: the packages' integration tests share one master and one minion; run them one package at a
# time (the minion's execution lock would otherwise refuse overlapping runs).
if [ "$all" = 0 ]; then
  exec go test -p 1 -run 'Integration|Live' -count=1 -v "${args[@]}" "${pkgs[@]}"
fi

# The whole suite, verbose into a log; the summary says which live tests ran, skipped or failed.
log=${TEST_LOG:-${TMPDIR:-/tmp}/oduflow-harness-test.$(date +%Y%m%dT%H%M%S).log}
t=$(now)
status=0
go test -race -p 1 -count=1 -v "${args[@]}" "${pkgs[@]}" > "$log" 2>&1 || status=$?
suite_s=$(( $(now) - t ))
{
  echo "run-integration: go test -race -p 1 -count=1 ./... exit ${status} in ${suite_s}s (log: $log)"
  grep -E '^(ok|FAIL|panic:)\s|^\s*--- FAIL' "$log" || true
  echo "run-integration: the live tests (top-level tests named *Integration* or *Live*):"
  grep -E '^--- (PASS|FAIL|SKIP): \S*(Integration|Live)' "$log" || true
  printf 'run-integration: live tests: %s passed, %s skipped, %s failed\n' \
    "$(grep -cE '^--- PASS: \S*(Integration|Live)' "$log" || true)" \
    "$(grep -cE '^--- SKIP: \S*(Integration|Live)' "$log" || true)" \
    "$(grep -cE '^--- FAIL: \S*(Integration|Live)' "$log" || true)"
  if [ "$mode" = compose ]; then
    echo "run-integration: timings: up ${up_s}s, minion ready ${wait_s}s, suite ${suite_s}s, total $(( $(now) - started ))s (before down)"
  fi
} >&2
exit "$status"
