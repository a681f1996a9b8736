#!/usr/bin/env bash
# Live HA check: two oduflowctl "hosts" (process families), one per Salt master of the lab's multi-master
# mode, sharing one claim store in a real etcd 3.4 (/usr/bin/etcd on loopback, a temporary data dir).
#
#   1. many processes of both families start one new request at once: it is published once;
#   2. (disruptive) a request started through master A: right after its salt/job/<jid>/new is seen on
#      bus A, A's detached worker is SIGKILLed and master A is stopped (the minion keeps applying, its
#      return to A is lost, its receipt stays on the minion). Through master B: status turns unknown
#      after the lock TTL, `resume --wait` returns the minion's exact receipt, and
#      the same request started again answers from the claim and publishes nothing. Master A is then
#      restarted (its keys rotate; the key file is read again) and the same start through A publishes
#      nothing either.
#   Throughout, `oduflowctl events --tag salt/job/` reads bus A and bus B; oduflow_job.run publications
#   are counted per JID and per request id on both buses.
#
# Usage (as root, the lab started with `saltlab.sh start multi`):
#   bash examples/harness/ha/run.sh          # the whole check (stops and restarts master A)
#   bash examples/harness/ha/run.sh --safe   # only part 1 (never stops anything)
# Environment: SALTLAB (default /work/shared/lab/saltlab.sh), HA_STARTERS (processes per family, 6),
# HA_KEEP_MASTER_A=1 (rehearse part 2 without stopping master A: only controller A is killed),
# HA_STOP_AT=states|new: the worker is always SIGKILLed right after salt/job/<jid>/new on bus A; master A
# is stopped once the minion's job process logs its first "Running state" (states, the default), or at
# once with the kill (new). The job fetches its state files from the publishing master at its start: with
# master A gone before that, Salt's job waits on A's file server (3 x 60 s), then raises, the minion keeps
# a running record with a free lock and answers unknown, and resume rightly stays unknown (exit 5).
# Everything it starts listens on 127.0.0.1 only and is stopped on exit; its files live in one mktemp dir.
set -u -o pipefail

SAFE=0
case "${1:-}" in --safe) SAFE=1 ;; "") ;; *) echo "usage: $0 [--safe]" >&2; exit 2 ;; esac
SALTLAB="${SALTLAB:-/work/shared/lab/saltlab.sh}"
STARTERS="${HA_STARTERS:-6}"
KEEP_A="${HA_KEEP_MASTER_A:-0}" # 1: rehearse part 2 without stopping master A
STOP_AT="${HA_STOP_AT:-states}"  # states: stop master A once the minion runs its states; new: at the job's /new on bus A
REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
TMP="$(mktemp -d /tmp/oduflow-ha.XXXXXX)"
BIN="$TMP/oduflowctl"
T0=$(date +%s.%N)
FAILS=0
BG_PIDS=()
MASTER_A_STOPPED=0
ETCD_PID=""

ts() { printf '[%7.2fs]' "$(echo "$(date +%s.%N) - $T0" | bc)"; }
say() { echo "$(ts) $*"; }
# run CMD...: print the command, run it, print its stdout+stderr and exit status; returns that status.
run() {
  echo "$(ts) \$ $*"
  "$@" >"$TMP/last.out" 2>"$TMP/last.err"
  local rc=$?
  sed 's/^/    /' "$TMP/last.out"
  sed 's/^/    stderr: /' "$TMP/last.err"
  echo "    (exit $rc)"
  return $rc
}
check() { # check NAME CONDITION-STATUS
  if [ "$2" -eq 0 ]; then echo "CHECK $1 ok"; else echo "CHECK $1 FAIL"; FAILS=$((FAILS + 1)); fi
}
RESULTS=()
record() { # record NAME CONDITION-STATUS: printed now and again in the summary
  check "$1" "$2"
  if [ "$2" -eq 0 ]; then RESULTS+=("CHECK $1 ok"); else RESULTS+=("CHECK $1 FAIL"); fi
}

# mine: PIDs of processes running this build's binary (detached workers included), readers excepted.
mine() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$BIN" ] || continue
    p=${p#/proc/}
    [[ " ${BG_PIDS[*]} " == *" $p "* ]] || echo "$p"
  done
}
cleanup() {
  local p
  for p in "${BG_PIDS[@]}" $(mine); do kill "$p" 2>/dev/null; done
  if [ -n "$ETCD_PID" ]; then kill "$ETCD_PID" 2>/dev/null; wait "$ETCD_PID" 2>/dev/null; fi
  if [ "$MASTER_A_STOPPED" = 1 ]; then
    echo "$(ts) cleanup: master A is still stopped; restarting it"
    bash "$SALTLAB" restart master
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- lab environment --------------------------------------------------------------------------------
eval "$(bash "$SALTLAB" env)"
for v in ODUFLOW_SALT_MASTER ODUFLOW_SALT_MASTER_B ODUFLOW_SALT_EVENTS_B ODUFLOW_SALT_KEY_FILE_B ODUFLOW_SALT_PKI_DIR_B; do
  [ -n "${!v:-}" ] || { echo "$v is not set: start the lab with 'saltlab.sh start multi'" >&2; exit 2; }
done
MINION="$ODUFLOW_SALT_MINION"
SALT="$ODUFLOW_SALTLAB_DIR/bin/salt"
# The minion's receipt directory: its oduflow_receipt_dir option when the lab's config sets one.
RECEIPTS=${ODUFLOW_RECEIPT_DIR:-$(sed -n 's/^oduflow_receipt_dir: *//p' "$ODUFLOW_SALTLAB_DIR/etc/minion" 2>/dev/null | head -1)}
RECEIPTS=${RECEIPTS:-/var/lib/oduflow/job-receipts}
unset ODUFLOW_SALT_EAUTH ODUFLOW_SALT_USER ODUFLOW_SALT_PASSWORD # both families use the masters' root key

say "oduflow HA check: two masters, two oduflowctl families, one etcd claim store ($(date -u +%FT%TZ))"
run bash "$SALTLAB" status

# ---- build ------------------------------------------------------------------------------------------
run timeout 600 go build -C "$REPO" -o "$BIN" ./examples/oduflowctl || exit 1

# ---- etcd on loopback -------------------------------------------------------------------------------
CPORT=$(free_port); PPORT=$(free_port)
while [ "$PPORT" = "$CPORT" ]; do PPORT=$(free_port); done
run /usr/bin/etcd --version
say "\$ /usr/bin/etcd --name ha --data-dir $TMP/etcd-data --listen-client-urls http://127.0.0.1:$CPORT" \
  "--advertise-client-urls http://127.0.0.1:$CPORT --listen-peer-urls http://127.0.0.1:$PPORT" \
  "--initial-advertise-peer-urls http://127.0.0.1:$PPORT --initial-cluster ha=http://127.0.0.1:$PPORT &"
/usr/bin/etcd --name ha --data-dir "$TMP/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$CPORT" --advertise-client-urls "http://127.0.0.1:$CPORT" \
  --listen-peer-urls "http://127.0.0.1:$PPORT" --initial-advertise-peer-urls "http://127.0.0.1:$PPORT" \
  --initial-cluster "ha=http://127.0.0.1:$PPORT" >"$TMP/etcd.log" 2>&1 &
ETCD_PID=$!
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$CPORT/health" >/dev/null 2>&1 && break; sleep 0.2; done
run curl -fsS "http://127.0.0.1:$CPORT/health" || { tail -20 "$TMP/etcd.log"; exit 1; }
CLAIMS="etcd://127.0.0.1:$CPORT/oduflow/ha-$$"

# ---- the two families -------------------------------------------------------------------------------
mkdir -m 0700 "$TMP/host-a" "$TMP/host-b"
# Each family is one dispatcher host: its own master, bus, key, PKI dir and state dir (worker log); the
# claim store is shared. ENV_A is rebuilt after master A restarts (its key file changes).
set_env_a() {
  ENV_A=(ODUFLOW_SALT_MASTER="$ODUFLOW_SALT_MASTER" ODUFLOW_SALT_EVENTS="$ODUFLOW_SALT_EVENTS"
    ODUFLOW_SALT_KEY_FILE="$ODUFLOW_SALT_KEY_FILE" ODUFLOW_STATE_DIR="$TMP/host-a" ODUFLOW_OUTPUT=json
    ODUFLOW_DEBUG="$DEBUG")
  ARGS_A=(--claims "$CLAIMS" --pki-dir "$ODUFLOW_SALT_PKI_DIR")
}
DEBUG="" # part 2 sets it, so that the detached workers' logs say what they did
set_env_a
set_env_b() {
  ENV_B=(ODUFLOW_SALT_MASTER="$ODUFLOW_SALT_MASTER_B" ODUFLOW_SALT_EVENTS="$ODUFLOW_SALT_EVENTS_B"
    ODUFLOW_SALT_KEY_FILE="$ODUFLOW_SALT_KEY_FILE_B" ODUFLOW_STATE_DIR="$TMP/host-b" ODUFLOW_OUTPUT=json
    ODUFLOW_DEBUG="$DEBUG")
  ARGS_B=(--claims "$CLAIMS" --pki-dir "$ODUFLOW_SALT_PKI_DIR_B")
}
set_env_b
famA() { env "${ENV_A[@]}" "$BIN" "${ARGS_A[@]}" "$@"; }
famB() { env "${ENV_B[@]}" "$BIN" "${ARGS_B[@]}" "$@"; }
say "famA = env ${ENV_A[*]} oduflowctl ${ARGS_A[*]}"
say "famB = env ${ENV_B[*]} oduflowctl ${ARGS_B[*]}"

# ---- module -----------------------------------------------------------------------------------------
"$BIN" module >"$TMP/oduflow_job.py"
if cmp -s "$TMP/oduflow_job.py" "$ODUFLOW_SALT_MODULES_DIR/oduflow_job.py"; then
  say "oduflow_job.py in $ODUFLOW_SALT_MODULES_DIR is already this build's module"
else
  run "$BIN" module --install "$ODUFLOW_SALT_MODULES_DIR"
fi
run "$SALT" "$MINION" saltutil.sync_modules --out=json
run famA ping "$MINION"
run famB ping "$MINION"

# ---- bus readers ------------------------------------------------------------------------------------
start_reader() { # start_reader A|B FILE
  local -n envs=ENV_$1 args=ARGS_$1
  env "${envs[@]}" "$BIN" "${args[@]}" events --tag salt/job/ >>"$2" 2>>"$2.err" & # env execs: $! is the reader
  BG_PIDS+=($!)
  eval "READER_$1=$!"
  for _ in $(seq 100); do grep -q 'events: reading' "$2.err" 2>/dev/null && break; sleep 0.1; done
  say "bus $1 reader pid $! ($(cat "$2.err"))"
}
BUS_A="$TMP/bus-a.jsonl"; BUS_B="$TMP/bus-b.jsonl"; : >"$BUS_A"; : >"$BUS_B"
say "\$ famA events --tag salt/job/ >> bus-a.jsonl &   and   famB events --tag salt/job/ >> bus-b.jsonl &"
start_reader A "$BUS_A"
start_reader B "$BUS_B"

# runs BUSFILE JID: oduflow_job.run publications of JID on that bus.
runs() { jq -cR --arg t "salt/job/$2/new" 'fromjson? | select(.tag == $t and .data.fun == "oduflow_job.run")' "$1" | wc -l; }
# runs_req BUSFILE REQ: oduflow_job.run publications on that bus whose arguments name REQ.
runs_req() { jq -cR --arg r "$2" 'fromjson? | select((.tag | test("^salt/job/[0-9]+/new$")) and .data.fun == "oduflow_job.run"
  and ((.data.arg | tostring) | contains($r)))' "$1" | wc -l; }
count_line() { # count_line JID REQ
  local a b ra rb
  a=$(runs "$BUS_A" "$1"); b=$(runs "$BUS_B" "$1"); ra=$(runs_req "$BUS_A" "$2"); rb=$(runs_req "$BUS_B" "$2")
  say "oduflow_job.run publications: jid $1 bus A $a, bus B $b; request $2 bus A $ra, bus B $rb"
  COUNT=$((a + b)); COUNT_REQ=$((ra + rb))
}
newreq() { python3 -c 'import uuid; print(uuid.uuid4())'; }

# ==== part 1: many processes of both families start one new request at once ===========================
echo
say "PART 1: $STARTERS processes per family start one new request at once"
REQ1=$(newreq)
mkdir "$TMP/p1"
P1_PIDS=()
for fam in A B; do
  for i in $(seq "$STARTERS"); do
    (
      while [ ! -e "$TMP/p1/go" ]; do sleep 0.01; done
      fam$fam start configure "$MINION" "$REQ1" >"$TMP/p1/$fam$i.out" 2>"$TMP/p1/$fam$i.err"
      echo $? >"$TMP/p1/$fam$i.rc"
    ) &
    P1_PIDS+=($!)
  done
done
sleep 1
say "\$ (x$STARTERS each, released together) famA start configure $MINION $REQ1  |  famB start configure $MINION $REQ1"
touch "$TMP/p1/go"
wait "${P1_PIDS[@]}"
bad=0
for fam in A B; do
  for i in $(seq "$STARTERS"); do
    echo "    fam$fam #$i exit $(cat "$TMP/p1/$fam$i.rc"): $(cat "$TMP/p1/$fam$i.out") $(tr '\n' ' ' <"$TMP/p1/$fam$i.err")"
    [ "$(cat "$TMP/p1/$fam$i.rc")" = 0 ] || bad=1
  done
done
JIDS1=$(cat "$TMP"/p1/*.out | jq -r .jid | sort -u)
say "distinct JIDs in the $((2 * STARTERS)) answers: $(echo $JIDS1)"
record "part1: every concurrent start exits 0" $bad
[ "$(echo "$JIDS1" | wc -l)" = 1 ] && [ "$JIDS1" != null ]; record "part1: every answer names the same JID" $?
JID1=$(echo "$JIDS1" | head -1)
run famB status configure "$MINION" "$REQ1" --wait --timeout 300s
[ "$(jq -r .status "$TMP/last.out" 2>/dev/null | tail -1)" = succeeded ]
record "part1: the request succeeded (status --wait through B)" $?
run famA status configure "$MINION" "$REQ1"
sleep 3 # let late events reach the readers
count_line "$JID1" "$REQ1"
[ "$COUNT" = 1 ]; record "part1: jid $JID1 published once (bus A + bus B = $COUNT)" $?
[ "$COUNT_REQ" = 1 ]; record "part1: request $REQ1 published once (bus A + bus B = $COUNT_REQ)" $?
say "bus events of jid $JID1:"
jq -cR --arg j "$JID1" 'fromjson? | select(.tag | contains($j)) | {tag, fun: .data.fun, stamp: .data._stamp}' "$BUS_A" | sed 's/^/    A /'
jq -cR --arg j "$JID1" 'fromjson? | select(.tag | contains($j)) | {tag, fun: .data.fun, stamp: .data._stamp}' "$BUS_B" | sed 's/^/    B /'

if [ "$SAFE" = 1 ]; then
  echo; say "--safe: part 2 (stopping master A) skipped"
  echo; say "SUMMARY"; printf '%s\n' "${RESULTS[@]}"
  [ "$FAILS" = 0 ] && { echo "ALL CHECKS ok"; exit 0; } || { echo "$FAILS CHECK(S) FAILED"; exit 1; }
fi

# ==== part 2: lose master A and controller A mid-apply; finish through B ================================
echo
say "PART 2: start through A; SIGKILL A's worker at its salt/job/<jid>/new on bus A; stop master A (HA_STOP_AT=$STOP_AT)"
DEBUG=1; set_env_a; set_env_b
say "from here on ODUFLOW_DEBUG=1 in both families (the CLI's and the workers' logs go to stderr / worker.log)"
REQ2=$(newreq)
BEFORE_START=$(date +%s.%N)
MLOG="$ODUFLOW_SALTLAB_DIR/logs/minion.log"
MLOG_FROM=$(($(stat -c %s "$MLOG") + 1))
run famA start configure "$MINION" "$REQ2"
JID2=$(jq -r .jid "$TMP/last.out" | head -1)
# The detached worker's argv is exactly <exe> MINION REQUEST (ODUFLOW_DETACHED_WORKER=1 in its environment).
WPID=""
for p in $(pgrep -f -- "$REQ2"); do
  mapfile -d '' argv <"/proc/$p/cmdline" 2>/dev/null || continue
  if [ "${#argv[@]}" = 3 ] && [ "${argv[1]}" = "$MINION" ] && [ "${argv[2]}" = "$REQ2" ] &&
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'ODUFLOW_DETACHED_WORKER=1'; then WPID=$p; fi
done
say "worker of $REQ2: pid ${WPID:-none} ($(tr '\0' ' ' <"/proc/$WPID/cmdline" 2>/dev/null))"
[ -n "$WPID" ]; record "part2: controller A's detached worker found by its request id" $?
for _ in $(seq 3000); do grep -q "\"salt/job/$JID2/new\"" "$BUS_A" && break; sleep 0.01; done
KILLED=$(date +%s.%N)
say "seen on bus A: $(grep -c "\"salt/job/$JID2/new\"" "$BUS_A") salt/job/$JID2/new at $(date -u +%T.%3N) UTC; now: kill -KILL $WPID"
say "\$ kill -KILL $WPID"
kill -KILL "$WPID"
if [ "$STOP_AT" = states ]; then
  JPID=""
  for _ in $(seq 3000); do
    [ -n "$JPID" ] || JPID=$(tail -c +"$MLOG_FROM" "$MLOG" | sed -n "s/.*Starting a new job $JID2 with PID \([0-9]*\).*/\1/p" | head -1)
    [ -n "$JPID" ] && tail -c +"$MLOG_FROM" "$MLOG" | grep -q "\[$JPID\] Running state" && break
    sleep 0.01
  done
  say "HA_STOP_AT=states: the minion's job process $JPID runs its states at $(date -u +%T.%3N) UTC: $(tail -c +"$MLOG_FROM" "$MLOG" | grep "\[$JPID\] Running state" | head -1 | cut -c1-160)"
fi
if [ "$KEEP_A" = 1 ]; then
  say "HA_KEEP_MASTER_A=1: master A is NOT stopped (rehearsal; only controller A is lost)"
else
  MASTER_A_STOPPED=1
  say "\$ bash $SALTLAB stop master"
  bash "$SALTLAB" stop master 2>&1 | sed 's/^/    /'
fi
say "minion receipt right after the stop: $(cat "$RECEIPTS/req-$REQ2.json" 2>/dev/null || echo none)"
gone=1
for _ in $(seq 30); do
  st=$(awk '{print $3}' "/proc/$WPID/stat" 2>/dev/null)
  if [ -z "$st" ] || [ "$st" = Z ]; then gone=0; break; fi
  sleep 0.1
done
record "part2: the worker is gone (SIGKILLed)" $gone
A_RET=$(grep -c "\"salt/job/$JID2/ret/" "$BUS_A")
say "returns of $JID2 seen on bus A before it went down: $A_RET"
for log in minion master; do
  say "lab $log.log lines naming $JID2:"
  grep -F "$JID2" "$ODUFLOW_SALTLAB_DIR/logs/$log.log" 2>/dev/null | tail -8 | cut -c1-300 | sed 's/^/    /'
done
run bash "$SALTLAB" status

say "through B: status until it reads unknown (the lock TTL, 15 s, after the kill)"
UNKNOWN_AT=""
last=""
FIRST_B=""
for _ in $(seq 120); do
  famB status configure "$MINION" "$REQ2" >"$TMP/st.out" 2>"$TMP/st.err"; rc=$?
  cur="$(jq -r .status "$TMP/st.out" 2>/dev/null) exit $rc"
  [ -n "$FIRST_B" ] || FIRST_B="$cur"
  if [ "$cur" != "$last" ]; then
    echo "$(ts) \$ famB status configure $MINION $REQ2"
    sed 's/^/    /' "$TMP/st.out" "$TMP/st.err"; echo "    (exit $rc)"
    last="$cur"
  fi
  if [ "$rc" = 5 ]; then UNKNOWN_AT=$(date +%s.%N); break; fi
  sleep 1
done
[ "$FIRST_B" = "running exit 0" ]; record "part2: right after the kill, status through B reads running" $?
if [ -n "$UNKNOWN_AT" ]; then
  since_kill=$(echo "$UNKNOWN_AT - $KILLED" | bc); since_start=$(echo "$UNKNOWN_AT - $BEFORE_START" | bc)
  say "unknown $(printf %.1f "$since_kill") s after the kill, $(printf %.1f "$since_start") s after the start command began"
  record "part2: status through B turns unknown (exit 5)" 0
  # The request was dispatched: the launch grace (which covers a claim no worker has locked yet) is
  # over, and unknown comes when etcd expires the dead worker's lock lease, the TTL after the kill
  # (a second of slack for the kill's own timing).
  [ "$(echo "$since_kill > 14" | bc)" = 1 ]
  record "part2: unknown only once the lock TTL (15 s) after the kill has passed" $?
else
  record "part2: status through B turns unknown (exit 5)" 1
fi
QREQ=$(newreq)
run famB start configure "$MINION" "$QREQ" --wait --timeout 90s
[ $? = 1 ] && grep -q "error code quarantined" "$TMP/last.err"
record "part2: meanwhile a new request for that minion through B is refused as quarantined" $?

run famB resume "$MINION" "$REQ2" --wait --timeout 400s --interval 10s
RESUME_RC=$?
RESUMED=$(jq -c . "$TMP/last.out" 2>/dev/null | tail -1)
run cat "$RECEIPTS/req-$REQ2.json"
RECEIPT=$(cat "$RECEIPTS/req-$REQ2.json")
want=$(echo "$RECEIPT" | jq -c '{minion_id, request_id, jid, status, passed, total}')
got=$(echo "$RESUMED" | jq -c '{minion_id, request_id, jid, status, passed, total}' 2>/dev/null)
say "receipt on the minion: $want"
say "resume answered:       $got"
if [ "$(echo "$RECEIPT" | jq -r .status)" = succeeded ]; then
  [ "$RESUME_RC" = 0 ]; record "part2: resume --wait through B exits 0" $?
  [ "$want" = "$got" ]; record "part2: resume returns the minion's exact receipt (succeeded, jid $JID2)" $?
else
  # No terminal receipt on the minion: its apply never finished (see the minion log below); the minion
  # answers unknown and resume must say so (exit 5) rather than guess.
  say "NOTE: the minion holds no terminal receipt for $REQ2 (record: $(echo "$RECEIPT" | jq -r '.record // .status'))"
  JPID_RUN=$(tail -c +"$MLOG_FROM" "$MLOG" | sed -n "s/.*Starting a new job $JID2 with PID \([0-9]*\).*/\1/p" | head -1)
  tail -c +"$MLOG_FROM" "$MLOG" | grep -F "[${JPID_RUN:-none}]" | tail -5 | cut -c1-200 | sed 's/^/    minion.log: /'
  record "part2: resume returns the minion's exact receipt (succeeded, jid $JID2)" 1
  [ "$RESUME_RC" = 5 ] && [ "$(echo "$RESUMED" | jq -r .status)" = unknown ]
  record "part2: without a terminal receipt on the minion, resume through B stays unknown (exit 5), nothing republished" $?
  want="$got"
fi

run famB start configure "$MINION" "$REQ2"
[ "$(jq -c '{minion_id, request_id, jid, status, passed, total}' "$TMP/last.out")" = "$want" ]
record "part2: the same start through B answers the existing claim" $?
run famB status configure "$MINION" "$REQ2"

if [ "$KEEP_A" = 1 ]; then
  say "HA_KEEP_MASTER_A=1: master A was not stopped; not restarting it"
else
  say "restoring master A (its root key and AES key rotate)"
  run bash "$SALTLAB" restart master
  MASTER_A_STOPPED=0
fi
eval "$(bash "$SALTLAB" env)"
set_env_a
say "master A's key file read again: $ODUFLOW_SALT_KEY_FILE"
unset ODUFLOW_SALT_EAUTH ODUFLOW_SALT_USER ODUFLOW_SALT_PASSWORD
kill "$READER_A" 2>/dev/null
start_reader A "$BUS_A"
run "$SALT" "$MINION" test.ping --out=txt -t 10
run famA ping "$MINION"
run famA start configure "$MINION" "$REQ2"
[ "$(jq -c '{minion_id, request_id, jid, status, passed, total}' "$TMP/last.out")" = "$want" ]
record "part2: the same start through A (restarted) answers the existing claim" $?
run famA status configure "$MINION" "$REQ1"
sleep 3
echo
count_line "$JID2" "$REQ2"
[ "$COUNT" = 1 ]; record "part2: jid $JID2 published once (bus A + bus B = $COUNT)" $?
[ "$COUNT_REQ" = 1 ]; record "part2: request $REQ2 published once (bus A + bus B = $COUNT_REQ)" $?
[ "$(runs_req "$BUS_A" "$QREQ")" = 0 ] && [ "$(runs_req "$BUS_B" "$QREQ")" = 0 ]
record "part2: the quarantined request $QREQ was never published" $?
count_line "$JID1" "$REQ1"
[ "$COUNT" = 1 ] && [ "$COUNT_REQ" = 1 ]; record "part1 still: jid $JID1 / request $REQ1 published once" $?
say "bus events of jid $JID2 (status polls have their own JIDs):"
jq -cR --arg j "$JID2" 'fromjson? | select(.tag | contains($j)) | {tag, fun: .data.fun, stamp: .data._stamp}' "$BUS_A" | sed 's/^/    A /'
jq -cR --arg j "$JID2" 'fromjson? | select(.tag | contains($j)) | {tag, fun: .data.fun, stamp: .data._stamp}' "$BUS_B" | sed 's/^/    B /'
say "oduflow_job.* publications per bus during the check:"
for bus in A B; do
  f=$BUS_A; [ $bus = B ] && f=$BUS_B
  jq -rR 'fromjson? | select((.tag | test("^salt/job/[0-9]+/new$")) and (.data.fun | tostring | startswith("oduflow_job."))) | .data.fun' "$f" |
    sort | uniq -c | sed "s/^/    $bus /"
done
say "worker logs:"
for h in a b; do sed "s/^/    host-$h: /" "$TMP/host-$h/worker.log" 2>/dev/null | grep -v 'msg="salt request done"' | cut -c1-400; done

left=$(mine)
say "processes of this build still running (readers aside): ${left:-none}"
for p in $left; do echo "    $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done
[ -z "$left" ]; record "no worker or command left running" $?

echo
run bash "$SALTLAB" status
grep -q "^master: running" "$TMP/last.out" && grep -q "^master-b: running" "$TMP/last.out" &&
  grep -q "^minion: running" "$TMP/last.out" && [ "$(grep -c ": True$" "$TMP/last.out")" = 2 ]
record "lab restored: both masters and the minion up, test.ping True through A and B" $?

echo; say "SUMMARY"; printf '%s\n' "${RESULTS[@]}"
[ "$FAILS" = 0 ] && { echo "ALL CHECKS ok"; exit 0; } || { echo "$FAILS CHECK(S) FAILED"; exit 1; }
