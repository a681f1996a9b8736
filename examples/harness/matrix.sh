#!/usr/bin/env bash
# The version matrix: the live checks on every lab named in a lab list, one lab after the other, then
# one table, version x check. Called by `run-integration.sh --matrix [--labs FILE] [--quick]
# [--disruptive]`; exit 0 when every check of every lab passed, 1 when one failed, 2 on bad input.
#
# The lab list (FILE, else $SALTLAB_LABS): one lab a line, `NAME KIT [VAR=VALUE...]`, # comments:
#   3006.0   /work/shared/lab/saltlab.sh          SALTLAB_DIR=/srv/saltlab
#   3007.8   /work/shared/lab/saltlab-release.sh  SALTLAB_DIR=/srv/saltlab-3007 SALTLAB_PORT_BASE=4900
# Each lab's ODUFLOW_SALT_* variables come from `env VARS bash KIT env`, in an environment with no
# other lab's variables. The labs run in multi-master mode (`KIT start multi`) for the pause check.
#
# Checks, each ok, FAIL or skip (with its reason in the log):
#   salt        the minion's Salt (test.version through oduflowctl run)
#   module      oduflowctl module --install + saltutil.sync_modules
#   ping        oduflowctl ping: ready (the guard's forms printed in the log)
#   configure   start configure --wait: succeeded 3/3
#   production  start production --wait: failed 2/3 (the real run)
#   no_raw      no *.p (state caches, parallel results) in the minion's cachedir after the two runs
#               (those plain Salt runs left before are removed first)
#   live        go test -p 1 -run 'Integration|Live' ./... ./oduflow/etcdstore/... ./examples/... (every module of the workspace but the nested test modules): every live test passed (none failed)
#   pause       examples/harness/pause/run.sh (fencing through a paused worker; needs master B)
#   forge       examples/harness/forge/run.sh (forged returns never accepted)
# --quick skips live, pause and forge. --disruptive also runs the live steps that restart the minion
# and stop the master (ODUFLOW_LAB_DISRUPTIVE=1: several minutes a lab).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
die() { echo "matrix: $*" >&2; exit 2; }
say() { echo "matrix: $*" >&2; }

# --- one lab's checks, in that lab's environment (lab_run below starts this) --------------------
if [ "${1:-}" = --lab-checks ]; then
  eval "$2"
  bin=$3 quick=$4 disruptive=$5
  export ODUFLOW_OUTPUT=json
  export ODUFLOW_STATE_DIR
  ODUFLOW_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/oduflow-matrix-claims.XXXXXX")
  unset ODUFLOW_CLAIMS
  minion=$ODUFLOW_SALT_MINION
  cache=$(sed -n 's/^cachedir:[[:space:]]*//p' "$ODUFLOW_SALTLAB_DIR/etc/minion" | tail -1)
  cache=${cache:-$ODUFLOW_SALTLAB_DIR/cache/minion}
  d=$(sed -n 's/^oduflow_receipt_dir:[[:space:]]*//p' "$ODUFLOW_SALTLAB_DIR/etc/minion" | tail -1)
  [ -z "$d" ] || export ODUFLOW_RECEIPT_DIR="$d"
  result() { echo "MATRIX $1 $2"; }
  step() { echo; echo "== $* =="; }
  field() { python3 -c 'import json,sys
for line in sys.stdin:
    line=line.strip()
    if line.startswith("{"):
        v=json.loads(line)
        for k in sys.argv[1].split("."):
            v=v.get(k) if isinstance(v,dict) else None
        if v is not None: print(v); break' "$1"; }

  step "salt version"
  v=$("$bin" run "$minion" test.version 2>&1 | field return)
  echo "minion $minion: Salt ${v:-?}"
  if [ -n "$v" ]; then result salt "$v"; else result salt FAIL; fi

  step "module: install and sync"
  if "$bin" module --install "$ODUFLOW_SALT_MODULES_DIR" && "$bin" run "$minion" saltutil.sync_modules >/dev/null; then
    result module ok; else result module FAIL; fi

  step "ping"
  out=$("$bin" --output text ping "$minion" 2>&1); rc=$?
  echo "$out"
  if [ $rc = 0 ]; then result ping ok; else result ping FAIL; fi

  # start PROFILE WANT_STATUS WANT_PASSED WANT_TOTAL
  start() {
    step "start $1 --wait"
    local out s p t
    out=$("$bin" start "$1" "$minion" --wait --interval 500ms 2>&1)
    echo "$out"
    s=$(echo "$out" | field status) p=$(echo "$out" | field passed) t=$(echo "$out" | field total)
    if [ "$s" = "$2" ] && [ "$p" = "$3" ] && [ "$t" = "$4" ]; then result "$1" "ok"; else result "$1" FAIL; fi
  }
  # Salt's own state runs (a plain state.apply: the live tests compare one with the module's) leave
  # sls.p and highstate.cache.p: remove those first, so no_raw sees only what the two runs below leave.
  step "the minion's cachedir before the runs: remove *.p left by plain Salt runs"
  find "$cache" -name '*.p' -print -delete 2>&1 || true
  start configure succeeded 3 3
  start production failed 2 3

  step "no raw state return on the minion: find $cache -name '*.p'"
  raw=$(find "$cache" -name '*.p' 2>&1)
  if [ -z "$raw" ]; then echo "(none)"; result no_raw ok; else echo "$raw"; result no_raw FAIL; fi

  if [ "$quick" = 1 ]; then
    result live skip; result pause skip; result forge skip
    exit 0
  fi
  step "live tests: go test -p 1 -run 'Integration|Live' ./... ./oduflow/etcdstore/... ./examples/..."
  [ "$disruptive" = 0 ] || export ODUFLOW_LAB_DISRUPTIVE=1
  (cd "$root" && go test -p 1 -count=1 -run 'Integration|Live' -v ./... ./oduflow/etcdstore/... ./examples/... 2>&1) > "$ODUFLOW_STATE_DIR/live.log"
  rc=$?
  grep -E '^(ok|FAIL|panic:)\s|^--- (PASS|FAIL|SKIP): \S*(Integration|Live)' "$ODUFLOW_STATE_DIR/live.log"
  passed=$(grep -cE '^--- PASS: \S*(Integration|Live)' "$ODUFLOW_STATE_DIR/live.log")
  failed=$(grep -cE '^--- FAIL: ' "$ODUFLOW_STATE_DIR/live.log")
  skipped=$(grep -cE '^--- SKIP: \S*(Integration|Live)' "$ODUFLOW_STATE_DIR/live.log")
  echo "live: exit $rc, $passed passed, $skipped skipped, $failed failed"
  if [ $rc = 0 ] && [ "$failed" = 0 ] && [ "$passed" -gt 0 ]; then result live "ok($passed/$((passed + skipped)))"; else result live FAIL; fi

  step "pause"
  if [ -z "${ODUFLOW_SALT_MASTER_B:-}" ]; then
    echo "no master B (start the lab with: start multi)"; result pause skip
  elif bash "$here/pause/run.sh"; then result pause ok; else result pause FAIL; fi

  step "forge"
  if bash "$here/forge/run.sh"; then result forge ok; else result forge FAIL; fi
  exit 0
fi
# --- the matrix ----------------------------------------------------------------------------------
labs=${SALTLAB_LABS:-}
quick=0
disruptive=0
while [ $# -gt 0 ]; do
  case "$1" in
    --labs) [ $# -ge 2 ] || die "--labs needs a file"; labs=$2; shift 2 ;;
    --labs=*) labs=${1#--labs=}; shift ;;
    --quick) quick=1; shift ;;
    --disruptive) disruptive=1; shift ;;
    *) die "unknown argument $1 (--labs FILE, --quick, --disruptive)" ;;
  esac
done
[ -n "$labs" ] || die "no lab list: pass --labs FILE or set SALTLAB_LABS (lines: NAME KIT [VAR=VALUE...])"
[ -r "$labs" ] || die "cannot read the lab list $labs"

work=$(mktemp -d "${TMPDIR:-/tmp}/oduflow-matrix.XXXXXX")
bin=$work/oduflowctl
(cd "$root" && go build -o "$bin" ./examples/oduflowctl) || die "go build ./examples/oduflowctl failed"
checks=(salt module ping configure production no_raw live pause forge)
declare -A cell
names=()
started=$(date -u +%Y-%m-%dT%H:%MZ)

# lab_run NAME KIT VARS...: every check of one lab; results in cell[NAME,check]
lab_run() {
  local name=$1 kit=$2; shift 2
  local log=$work/$name.log envout rc t
  : > "$log"
  if ! envout=$(env "$@" bash "$kit" env 2>>"$log"); then
    for c in "${checks[@]}"; do cell[$name,$c]="FAIL"; done
    say "$name: $kit env failed (log $log)"
    return
  fi
  # One subshell per lab: its variables only.
  # shellcheck disable=SC2046
  env $(env | sed -n 's/^\(ODUFLOW_[A-Z_]*\)=.*/-u \1/p') "$@" \
    SALTLAB="$kit" SALTLAB_SH="$kit" ODUFLOW_SALTLAB_SH="$kit" \
    bash "$here/matrix.sh" --lab-checks "$envout" "$bin" "$quick" "$disruptive" >> "$log" 2>&1
  while IFS=' ' read -r c v; do cell[$name,$c]=$v; done < <(sed -n 's/^MATRIX //p' "$log")
}

while read -r name kit vars; do
  case "$name" in ''|'#'*) continue ;; esac
  [ -r "$kit" ] || die "lab $name: cannot read its kit $kit"
  names+=("$name")
  say "=== $name ($kit $vars) ==="
  t=$(date +%s)
  # shellcheck disable=SC2086
  lab_run "$name" "$kit" $vars
  say "$name done in $(( $(date +%s) - t ))s (log $work/$name.log)"
done < "$labs"
[ ${#names[@]} -gt 0 ] || die "the lab list $labs names no lab"

status=0
{
  echo "Version matrix, $started (lab list $labs; logs in $work)"
  printf '| %-12s |' lab; for c in "${checks[@]}"; do printf ' %-10s |' "$c"; done; echo
  printf '|%s|' "--------------"; for c in "${checks[@]}"; do printf '%s|' "------------"; done; echo
  for n in "${names[@]}"; do
    printf '| %-12s |' "$n"
    for c in "${checks[@]}"; do
      v=${cell[$n,$c]:-FAIL}
      case "$v" in FAIL) status=1 ;; esac
      printf ' %-10s |' "$v"
    done
    echo
  done
}
exit "$status"
