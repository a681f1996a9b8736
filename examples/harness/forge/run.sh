#!/usr/bin/env bash
# Live trust check against a real Salt 3006 master (the lab): forged returns for a dispatched request,
# from another minion identity (the batched "events" form of _minion_event through Salt's own minion
# request channel, with a key pair of its own) and from the victim minion itself (event.fire_master),
# are never accepted; the real result is.
#
#   production (real result failed 2/3), forged succeeded 3/3 receipt: expect failed 2/3, exit 1
#   configure  (real result succeeded 3/3), forged failed 1/3 receipt: expect succeeded 3/3, exit 0
#
# Each case also prints the forged events the bus carried, the worker's log lines about unverified
# events and the number of oduflow_job.run publications of the JID (must be 1).
#
# Usage (as root, on the lab machine): bash examples/harness/forge/run.sh
# Needs the ODUFLOW_SALT_* variables (eval "$(bash saltlab.sh env)"); read from saltlab.sh when unset
# and SALTLAB_SH names it. Exit 0 when every check passes, 1 when one fails, 2 when no lab is named.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)

if [ -z "${ODUFLOW_SALT_MASTER:-}" ] && [ -n "${SALTLAB_SH:-}" ]; then
  eval "$(bash "$SALTLAB_SH" env)"
fi
for v in ODUFLOW_SALT_MASTER ODUFLOW_SALT_EVENTS ODUFLOW_SALT_KEY_FILE ODUFLOW_SALT_MINION \
  ODUFLOW_SALT_MODULES_DIR ODUFLOW_SALTLAB_DIR ODUFLOW_SALT_PKI_DIR; do
  [ -n "${!v:-}" ] || { echo "forge: $v is not set; run against the lab: eval \"\$(bash saltlab.sh env)\"" >&2; exit 2; }
done
# The forger is the only one here who speaks for master A; the dispatcher uses A too.
unset ODUFLOW_SALT_MASTER_B ODUFLOW_SALT_EVENTS_B ODUFLOW_SALT_KEY_FILE_B ODUFLOW_SALT_PKI_DIR_B

lab=$ODUFLOW_SALTLAB_DIR
minion=$ODUFLOW_SALT_MINION
# The forger signs in to the master the dispatcher uses (tcp://HOST:PORT): several labs run side by side on
# their own port bases, and a forger signing in elsewhere would test another Salt (or fail to sign in).
master_hostport=${ODUFLOW_SALT_MASTER#tcp://}
master_host=${master_hostport%:*}
master_port=${master_hostport##*:}
case $master_port in '' | *[!0-9]*) echo "forge: ODUFLOW_SALT_MASTER=$ODUFLOW_SALT_MASTER is not tcp://HOST:PORT" >&2; exit 2 ;; esac
work=$(mktemp -d /tmp/oduflow-forge.XXXXXX)
export ODUFLOW_STATE_DIR=$work/state
mkdir -m 0700 "$ODUFLOW_STATE_DIR"
export ODUFLOW_OUTPUT=json
py() { PYTHONPATH="$lab/src:$lab/pylib" /usr/bin/python3 "$@"; }
SALT_VERSION=$(py -c 'import salt.version; print(salt.version.__saltstack_version__.string)' 2>/dev/null || echo unknown)
SALT_MAJOR=${SALT_VERSION%%.*}
echo "== Salt $SALT_VERSION (the lab's source tree)"
fails=0
check_min() { # check_min NAME GOT MIN
  if [ "$2" -ge "$3" ]; then echo "  CHECK $1: $2 (want >= $3) ok"; else echo "  CHECK $1: $2 (want >= $3) FAIL"; fails=$((fails + 1)); fi
}
check() { # check NAME GOT WANT
  if [ "$2" = "$3" ]; then echo "  CHECK $1: $2 (want $3) ok"; else echo "  CHECK $1: $2 (want $3) FAIL"; fails=$((fails + 1)); fi
}

echo "== build and sync ($(date -u +%H:%M:%SZ), work dir $work)"
(cd "$repo" && go build -o "$work/oduflowctl" ./examples/oduflowctl)
ctl=$work/oduflowctl
"$ctl" module --install "$ODUFLOW_SALT_MODULES_DIR"
"$lab/bin/salt" "$minion" saltutil.sync_modules --out=json --static | tr -d '\n '; echo
"$ctl" ping "$minion"

forger_ids=()
cleanup() {
  # Remove the forged identities' accepted keys again (directly, so the master does not rotate its
  # AES key under the other users of the lab) and the work dir.
  for id in "${forger_ids[@]}"; do
    rm -f "$ODUFLOW_SALT_PKI_DIR/minions/$id"
    rm -rf "$lab/cache/master/minions/$id"
  done
  if [ -n "${FORGE_KEEP:-}" ]; then echo "forge: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# baseline PROFILE: the same request with nobody forging, for the time it takes on this lab.
baseline() {
  local out rc=0 t0 t1
  echo
  echo "== baseline $1 (no forger): $ctl start $1 $minion --wait"
  t0=$(date +%s.%N)
  out=$(timeout 180 "$ctl" start "$1" "$minion" --wait --pki-dir "$ODUFLOW_SALT_PKI_DIR" 2>/dev/null) || rc=$?
  t1=$(date +%s.%N)
  echo "   (stdout) $out"
  echo "   exit $rc after $(elapsed "$t0" "$t1") s"
}

run_case() { # run_case PROFILE FORGED_STATUS WANT_STATUS WANT_PASSED WANT_TOTAL WANT_EXIT
  local profile=$1 forge=$2 want_status=$3 want_passed=$4 want_total=$5 want_exit=$6
  local flog=$work/forger-$profile.log stop=$work/stop-$profile
  echo
  echo "== case $profile: real result $want_status $want_passed/$want_total, forged $forge receipt"
  py "$here/forger.py" --victim "$minion" --profile "$profile" --forge "$forge" --stop-file "$stop" \
    --master-conf "$lab/etc/master" --host "$master_host" --port "$master_port" --workdir "$work/forger-$profile" >"$flog" 2>"$flog.err" &
  local fpid=$!
  local i
  for i in $(seq 1 600); do
    grep -q '^forger: ready' "$flog" && break
    kill -0 "$fpid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^forger: ready' "$flog" || { echo "forger did not get ready"; cat "$flog" "$flog.err"; fails=$((fails + 1)); return; }
  forger_ids+=("$(sed -n 's/^forger: ready: authenticated to [^ ]* as \(client-[0-9a-f-]*\) .*/\1/p' "$flog")")
  echo "-- ODUFLOW_DEBUG=1 $ctl start $profile $minion --wait --pki-dir $ODUFLOW_SALT_PKI_DIR"
  local out rc=0 t0 t1
  t0=$(date +%s.%N)
  out=$(ODUFLOW_DEBUG=1 timeout 180 "$ctl" start "$profile" "$minion" --wait --pki-dir "$ODUFLOW_SALT_PKI_DIR" 2>"$work/ctl.err") || rc=$?
  t1=$(date +%s.%N)
  sed 's/^/   (stderr) /' "$work/ctl.err"
  echo "   (stdout) $out"
  echo "   exit $rc after $(elapsed "$t0" "$t1") s"
  touch "$stop"
  local frc=0
  wait "$fpid" || frc=$?
  echo "-- forger (exit $frc): the JID's events on master A's bus, sanitized, t_ms after salt/job/<jid>/new"
  cat "$flog"
  local summary jid
  summary=$(sed -n 's/^forger: summary //p' "$flog")
  jid=$(printf '%s' "$summary" | py -c 'import json,sys; print(json.load(sys.stdin)["jid"])')
  echo "-- worker log ($ODUFLOW_STATE_DIR/worker.log), lines about unverified events of jid $jid"
  grep -i 'unverified' "$ODUFLOW_STATE_DIR/worker.log" | grep -- "$jid" || echo "   (none)"
  echo "-- worker log timeline of jid $jid: its publication to the committed result (salt publish lines name the fun only)"
  awk -v j="jid=$jid" 'index($0, "msg=\"salt publish\" fun=oduflow_job.run") && index($0, j) { on = 1 }
    on && !/msg="salt request done"/ { print "   " $0 }
    on && index($0, "final result committed") && index($0, j) { exit }' "$ODUFLOW_STATE_DIR/worker.log"
  echo "-- checks"
  local got_status got_passed got_total got_jid
  read -r got_status got_passed got_total got_jid < <(printf '%s' "$out" | py -c \
    'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(r["status"], r["passed"], r["total"], r["jid"])')
  check "final status" "$got_status $got_passed/$got_total" "$want_status $want_passed/$want_total"
  check "exit status" "$rc" "$want_exit"
  check "jid printed by oduflowctl = jid the forger attacked" "$got_jid" "$jid"
  local n
  # Salt 3006 fires the batched form exactly as sent and wraps event.fire_master's; later Salts wrap
  # both (and a multi-master minion may fire twice), so the forms are told apart on 3006 only: what
  # every version must show is that forged returns reached the bus, and that they were refused.
  local nb nf
  nb=$(printf '%s' "$summary" | py -c 'import json,sys; print(json.load(sys.stdin)["forged_batched_on_bus"])')
  nf=$(printf '%s' "$summary" | py -c 'import json,sys; print(json.load(sys.stdin)["forged_fire_master_on_bus"])')
  echo "   forged events on the bus: $nb in the bare batched form, $nf wrapped as _minion_event"
  if [ "${SALT_MAJOR:-}" = 3006 ]; then
    check "forged batched events on the bus (another identity)" "$nb" 1
    check "forged event.fire_master events on the bus (the victim itself)" "$nf" 1
  else
    check_min "forged events on the bus (both forms; Salt $SALT_VERSION)" "$((nb + nf))" 1
  fi
  n=$(printf '%s' "$summary" | py -c 'import json,sys; print(json.load(sys.stdin)["real_returns_on_bus"])')
  check "real returns on the bus" "$n" 1
  n=$(printf '%s' "$summary" | py -c 'import json,sys; print(json.load(sys.stdin)["run_publications"])')
  check "oduflow_job.run publications (salt/job/$jid/new)" "$n" 1
  n=$(grep -i 'unverified' "$ODUFLOW_STATE_DIR/worker.log" | grep -c -- "$jid" || true)
  check "worker logged the unverified return (once per request)" "$n" 1
  echo "-- oduflowctl status $profile $minion <request id> (read back from the claim)"
  local rid
  rid=$(printf '%s' "$out" | py -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["request_id"])')
  local st src=0
  st=$("$ctl" status "$profile" "$minion" "$rid" 2>&1) || src=$?
  echo "   $st"
  echo "   exit $src"
  check "status read back" "$src" "$want_exit"
}

baseline production
baseline configure
run_case production succeeded failed 2 3 1
run_case configure failed succeeded 3 3 0

echo
if [ "$fails" -eq 0 ]; then echo "== forge: every check passed"; exit 0; fi
echo "== forge: $fails check(s) FAILED"
exit 1
