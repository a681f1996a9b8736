#!/usr/bin/env bash
# Live check of fencing through a process pause (a lab in multi-master mode, Debian's etcd 3.4 on
# loopback, two oduflowctl "hosts": family A through master A, family B through master B, one claim
# store):
#
#   R1 is started through A with the faultinject CLI (ODUFLOW_FAULT_STOP_AT=dispatch_recorded): its
#   detached worker records the dispatch intent, with its fencing token, and stops itself (SIGSTOP)
#   before publishing. Through B: R1's status turns unknown once the worker's lock lease expires; a new
#   request for the client is refused (quarantined); `reconcile R1 --from-minion` fences R1 at the
#   minion and records never_ran; R2 runs and succeeds. Then the stopped worker is continued: it
#   publishes R1 late, the minion refuses it (a signed fenced receipt, no state work), R1 stays never_ran,
#   R2 ran exactly once, and the two runs never overlapped.
#
# Usage (as root): bash examples/harness/pause/run.sh
# Environment: SALTLAB (the lab kit, default /work/shared/lab/saltlab.sh; saltlab-next.sh for the later
# Salt). On a fleet of its own (a host-named minion, ODUFLOW_PROFILES naming a table on both sides):
# PAUSE_PROFILE (default configure) is R1's and R2's profile, PAUSE_OTHER_PROFILE (default production)
# the one refused meanwhile, PAUSE_STATES (default 3) how many states R2 executes. Exit 0 when every
# check passes, 1 otherwise, 2 when no multi-master lab is running.
set -uo pipefail
SALTLAB="${SALTLAB:-/work/shared/lab/saltlab.sh}"
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
TMP="$(mktemp -d /tmp/oduflow-pause.XXXXXX)"
BIN="$TMP/oduflowctl-fi"
T0=$(date +%s.%N)
PROFILE="${PAUSE_PROFILE:-configure}"
OTHER="${PAUSE_OTHER_PROFILE:-production}"
STATES="${PAUSE_STATES:-3}"
FAILS=0
ETCD_PID=""
WORKER=""

ts() { printf '[%7.2fs]' "$(echo "$(date +%s.%N) - $T0" | bc)"; }
say() { echo "$(ts) $*"; }
run() { # run CMD...: print it, its stdout and stderr and its exit status; return that status
  echo "$(ts) \$ $*"
  "$@" >"$TMP/last.out" 2>"$TMP/last.err"
  local rc=$?
  sed 's/^/    /' "$TMP/last.out"
  grep -v 'level=DEBUG' "$TMP/last.err" | sed 's/^/    stderr: /'
  echo "    (exit $rc)"
  return $rc
}
check() { # check NAME CONDITION-STATUS
  if [ "$2" -eq 0 ]; then echo "CHECK $1 ok"; else echo "CHECK $1 FAIL"; FAILS=$((FAILS + 1)); fi
}
cleanup() {
  [ -n "$WORKER" ] && kill -CONT "$WORKER" 2>/dev/null
  [ -n "$ETCD_PID" ] && { kill "$ETCD_PID" 2>/dev/null; wait "$ETCD_PID" 2>/dev/null; }
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
field() { jq -r "$1" "$TMP/last.out" 2>/dev/null | tail -1; }

eval "$(bash "$SALTLAB" env)"
for v in ODUFLOW_SALT_MASTER ODUFLOW_SALT_MASTER_B ODUFLOW_SALT_EVENTS_B ODUFLOW_SALT_KEY_FILE_B ODUFLOW_SALT_PKI_DIR_B; do
  [ -n "${!v:-}" ] || { echo "$v is not set: start the lab with 'saltlab.sh start multi'" >&2; exit 2; }
done
unset ODUFLOW_SALT_EAUTH ODUFLOW_SALT_USER ODUFLOW_SALT_PASSWORD # both families use the masters' root keys
MINION="$ODUFLOW_SALT_MINION"
LAB="$ODUFLOW_SALTLAB_DIR"
SALT="$LAB/bin/salt"
say "oduflow pause check: $("$SALT" --version 2>/dev/null), minion $MINION ($(date -u +%FT%TZ))"

run timeout 600 go build -C "$REPO" -tags faultinject -o "$BIN" ./examples/oduflowctl || exit 1
run "$BIN" module --install "$ODUFLOW_SALT_MODULES_DIR" || exit 1
run "$SALT" "$MINION" saltutil.sync_modules --out=json --static || exit 1

CPORT=$(free_port); PPORT=$(free_port)
/usr/bin/etcd --name pause --data-dir "$TMP/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$CPORT" --advertise-client-urls "http://127.0.0.1:$CPORT" \
  --listen-peer-urls "http://127.0.0.1:$PPORT" --initial-advertise-peer-urls "http://127.0.0.1:$PPORT" \
  --initial-cluster "pause=http://127.0.0.1:$PPORT" >"$TMP/etcd.log" 2>&1 &
ETCD_PID=$!
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$CPORT/health" >/dev/null 2>&1 && break; sleep 0.2; done
say "etcd $(/usr/bin/etcd --version | head -1) on 127.0.0.1:$CPORT"
CLAIMS="etcd://127.0.0.1:$CPORT/oduflow/pause-$$"
mkdir -m 0700 "$TMP/host-a" "$TMP/host-b"
famA() {
  env ODUFLOW_SALT_MASTER="$ODUFLOW_SALT_MASTER" ODUFLOW_SALT_EVENTS="$ODUFLOW_SALT_EVENTS" \
    ODUFLOW_SALT_KEY_FILE="$ODUFLOW_SALT_KEY_FILE" ODUFLOW_STATE_DIR="$TMP/host-a" ODUFLOW_OUTPUT=json \
    "$BIN" "$@" --claims "$CLAIMS" --pki-dir "$ODUFLOW_SALT_PKI_DIR"
}
famB() {
  env ODUFLOW_SALT_MASTER="$ODUFLOW_SALT_MASTER_B" ODUFLOW_SALT_EVENTS="$ODUFLOW_SALT_EVENTS_B" \
    ODUFLOW_SALT_KEY_FILE="$ODUFLOW_SALT_KEY_FILE_B" ODUFLOW_STATE_DIR="$TMP/host-b" ODUFLOW_OUTPUT=json \
    "$BIN" "$@" --claims "$CLAIMS" --pki-dir "$ODUFLOW_SALT_PKI_DIR_B"
}
minion_log_off=$(stat -c %s "$LAB/logs/minion.log")
R1=$(python3 -c 'import uuid; print(uuid.uuid4())'); R2=$(python3 -c 'import uuid; print(uuid.uuid4())')
R0=$(python3 -c 'import uuid; print(uuid.uuid4())')

say "R1 through A, its worker stopped at dispatch_recorded"
ODUFLOW_FAULT_STOP_AT=dispatch_recorded run famA start "$PROFILE" "$MINION" "$R1"
JID1=$(field .jid)
for _ in $(seq 100); do
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$BIN" ] || continue
    [ "$(awk '{print $3}' "$p/stat" 2>/dev/null)" = T ] && WORKER=${p#/proc/}
  done
  [ -n "$WORKER" ] && break
  sleep 0.1
done
[ -n "$WORKER" ]; check "R1's worker stopped itself (state T)" $?
say "R1 jid $JID1, worker pid $WORKER: $(grep -o 'State:.*' "/proc/$WORKER/status" 2>/dev/null)"

say "through B: R1's status until unknown (the worker's lock lease expires)"
for _ in $(seq 90); do
  famB status "$PROFILE" "$MINION" "$R1" >"$TMP/last.out" 2>/dev/null; rc=$?
  [ "$rc" = 5 ] && break
  sleep 1
done
run famB status "$PROFILE" "$MINION" "$R1"; [ $? = 5 ] && [ "$(field .status)" = unknown ]
check "R1 reads unknown through B (exit 5)" $?
run famB start "$OTHER" "$MINION" "$R0" --wait --timeout 60s
[ "$(field .error_code)" = quarantined ]; check "a new request meanwhile is refused: quarantined" $?
run famB reconcile "$MINION" "$R1" --from-minion
[ "$(field .error_code)" = never_ran ]; check "reconcile --from-minion fences R1 and records never_ran" $?
run famB start "$PROFILE" "$MINION" "$R2" --wait --timeout 120s
[ "$(field .status)" = succeeded ]; check "R2 through B succeeds" $?
JID2=$(field .jid)

say "SIGCONT R1's worker $WORKER: it publishes R1 now, late"
kill -CONT "$WORKER"
for _ in $(seq 120); do [ -d "/proc/$WORKER" ] || break; sleep 0.5; done
[ ! -d "/proc/$WORKER" ]; check "R1's worker finished" $?
WORKER=""
sleep 2
run famA status "$PROFILE" "$MINION" "$R1"
[ "$(field .error_code)" = never_ran ]; check "R1 through A: still never_ran" $?
run famB status "$PROFILE" "$MINION" "$R2"
[ "$(field .status)" = succeeded ]; check "R2 through B: succeeded" $?
minion_status() { # the minion's own answer, through Salt's CLI (retried: a later Salt's event publisher may
  # still be catching up after the stopped worker's subscription stalled it, see README "A stalled bus")
  local i
  for i in 1 2 3; do
    run "$SALT" "$MINION" oduflow_job.status "$1" "\"$2\"" "$PROFILE" --out=json --static -t 30 && return 0
  done
  return 1
}
minion_status "$R1" "$JID1"
grep -q '"code": "fenced"' "$TMP/last.out"; check "the minion's receipt of R1: fenced (ran nothing)" $?
minion_status "$R2" "$JID2"
grep -q '"status": "succeeded"' "$TMP/last.out"; check "the minion's receipt of R2: succeeded" $?
tail -c +"$((minion_log_off + 1))" "$LAB/logs/minion.log" >"$TMP/minion.log"
say "minion.log lines naming R1's or R2's job:"
grep -E "$JID1|$JID2" "$TMP/minion.log" | cut -c1-200 | sed 's/^/    /'
pid_of() { sed -n "s/.*Starting a new job $1 with PID \([0-9]*\).*/\1/p" "$TMP/minion.log" | head -1; }
P1=$(pid_of "$JID1"); P2=$(pid_of "$JID2")
n1=$(grep -c "\]\[$P1\] Executing state" "$TMP/minion.log" 2>/dev/null); n2=$(grep -c "\]\[$P2\] Executing state" "$TMP/minion.log")
say "state executions: R1 (pid ${P1:-none}) $n1, R2 (pid ${P2:-none}) $n2"
[ "${n1:-0}" = 0 ] && [ -n "$P1" ]; check "R1's late run reached the minion and executed no state" $?
[ "$n2" = "$STATES" ]; check "R2 executed its $STATES states exactly once" $?
pubs() { cat "$LAB/logs/master.log" "$LAB/logs/master-b.log" 2>/dev/null | grep -c "Published command oduflow_job.run with jid $1"; }
[ "$(pubs "$JID1")" = 1 ] && [ "$(pubs "$JID2")" = 1 ]
check "one publication each (R1 $(pubs "$JID1"), R2 $(pubs "$JID2"), masters A and B)" $?
if [ "$FAILS" -eq 0 ]; then say "ALL CHECKS ok"; exit 0; fi
say "$FAILS CHECK(S) FAILED"
exit 1
