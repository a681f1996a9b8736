#!/usr/bin/env bash
# rolling-live.sh: the live rolling restart of two controller replicas on one etcd.
#
# Needs the 3006.0 Salt lab in multi mode with a fleet (see the README: saltlab.sh start multi, then
# saltlab.sh fleet 10) whose variables are in the environment (eval "$(saltlab.sh env)": ODUFLOW_SALT_*
# for master A, ODUFLOW_SALT_*_B for master B, ODUFLOW_SALT_FLEET), and an etcd binary (ETCD, default
# /usr/bin/etcd). It
#   1. installs this tree's oduflow_job.py into the lab's module directory and syncs it onto the fleet,
#   2. starts an etcd member on 127.0.0.1 with a temporary data directory,
#   3. starts replica A (through master A) and replica B (through master B) on one etcd prefix,
#   4. submits ROLLING_APPLIES (50) configure applies spread over ROLLING_MINIONS (10) fleet minions over
#      HTTP, alternating replicas, while SIGTERMing each replica once mid-run and restarting it,
#   5. waits until every request is terminal and checks: every apply succeeded, each request that was
#      dispatched was published exactly once (oduflow_job.run "new" events of its JID on both masters'
#      buses), and GET /v1/unresolved is empty on both replicas (no client quarantined).
# A request cut by a drain before its dispatch intent ends failed dispatcher_closed with nothing
# published; the client then submits a replacement with a new request id, as a real client does. Those
# are counted and must show zero publications.
# It exits 0 when every check passes, 1 otherwise, 2 when the lab is not there (saying why).
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
repo=$(cd ../.. && pwd)

APPLIES=${ROLLING_APPLIES:-50}
NMINIONS=${ROLLING_MINIONS:-10}
DRAIN=${ROLLING_DRAIN:-2s}          # short, so that a drain cuts runs and another replica adopts them
PACE=${ROLLING_PACE:-0.5}           # seconds between two submissions
FINAL_TIMEOUT=${ROLLING_FINAL_TIMEOUT:-420}
ETCD=${ETCD:-/usr/bin/etcd}
SALTLAB_DIR=${ODUFLOW_SALTLAB_DIR:-${SALTLAB_DIR:-/srv/saltlab}}

skip() { echo "rolling-live: SKIP: $*" >&2; exit 2; }
for v in ODUFLOW_SALT_MASTER ODUFLOW_SALT_EVENTS ODUFLOW_SALT_KEY_FILE ODUFLOW_SALT_PKI_DIR \
  ODUFLOW_SALT_MASTER_B ODUFLOW_SALT_EVENTS_B ODUFLOW_SALT_KEY_FILE_B ODUFLOW_SALT_PKI_DIR_B ODUFLOW_SALT_FLEET; do
  [ -n "${!v:-}" ] || skip "$v is unset: eval \"\$(saltlab.sh env)\" with the lab in multi mode and a fleet"
done
[ -x "$ETCD" ] || skip "no etcd at $ETCD (apt-get install etcd-server, or set ETCD)"
for t in curl jq go; do command -v $t >/dev/null || skip "$t is not installed"; done

IFS=',' read -r -a fleet <<<"${ODUFLOW_SALT_FLEET//\\/}"
[ "${#fleet[@]}" -ge "$NMINIONS" ] || skip "the fleet has ${#fleet[@]} minions, want $NMINIONS"
minions=("${fleet[@]: -$NMINIONS}")

work=$(mktemp -d /tmp/rolling-live.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}" $(cat "$work"/pid-* 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
t0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}'; }
say() { printf '[%7ss] %s\n' "$(since "$t0")" "$*"; }

say "work dir $work; minions ${minions[0]} .. ${minions[-1]} ($NMINIONS); $APPLIES applies; drain $DRAIN"

# 1. The minion module of this tree, synced onto the fleet minions used here.
go build -o "$work/controller" . 
(cd "$repo" && go build -o "$work/oduflowctl" ./examples/oduflowctl)
"$work/oduflowctl" module --install "${ODUFLOW_SALT_MODULES_DIR:-$SALTLAB_DIR/salt/_modules}" >/dev/null
list=$(IFS=,; echo "${minions[*]}")
synced=$("$SALTLAB_DIR/bin/salt" --out=json --static -L "$list" saltutil.sync_modules 2>/dev/null | jq -s "add | length" || echo "?")
say "oduflow_job.py synced onto $synced minions"

# 2. etcd on loopback, a fresh data dir.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ecl=$(port); epe=$(port)
"$ETCD" --name rolling --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$ecl" \
  --advertise-client-urls "http://127.0.0.1:$ecl" --listen-peer-urls "http://127.0.0.1:$epe" \
  --initial-advertise-peer-urls "http://127.0.0.1:$epe" --initial-cluster "rolling=http://127.0.0.1:$epe" \
  >"$work/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$ecl/health" >/dev/null 2>&1 && break; sleep 0.2; done
say "etcd $("$ETCD" --version | head -1 | awk '{print $3}') on 127.0.0.1:$ecl"
claims="etcd://127.0.0.1:$ecl/oduflow-rolling"

# 3. The replicas. A through master A, B through master B, one etcd prefix.
# Loopback replicas without authentication (ODUFLOW_INSECURE_NO_AUTH=1), every fleet minion bound to one
# company (ODUFLOW_CLIENTS): a start on an unbound client is refused.
for m in "${minions[@]}"; do echo "$m lab"; done >"$work/clients"
declare -A addr
addr[A]=127.0.0.1:$(port); addr[B]=127.0.0.1:$(port)
start_replica() { # start_replica A|B
  local r=$1 sfx=""
  [ "$r" = B ] && sfx=_B
  local m="ODUFLOW_SALT_MASTER$sfx" e="ODUFLOW_SALT_EVENTS$sfx" k="ODUFLOW_SALT_KEY_FILE$sfx" p="ODUFLOW_SALT_PKI_DIR$sfx"
  rm -f "$work/pid-$r"
  (
    # The controller is this subshell's child: it records the pid (read by the parent, since a restart
    # runs in another subshell) and the exit status.
    env -i PATH="$PATH" HOME="$HOME" ODUFLOW_SALT_MASTER="${!m}" ODUFLOW_SALT_EVENTS="${!e}" ODUFLOW_SALT_KEY_FILE="${!k}" \
      ODUFLOW_SALT_PKI_DIR="${!p}" ODUFLOW_CLAIMS="$claims" ODUFLOW_STATE_DIR="$work/state-$r" \
      ODUFLOW_LISTEN="${addr[$r]}" ODUFLOW_DRAIN_TIMEOUT="$DRAIN" \
      ODUFLOW_INSECURE_NO_AUTH=1 ODUFLOW_CLIENTS="$work/clients" \
      "$work/controller" >>"$work/replica-$r.log" 2>&1 &
    echo $! >"$work/pid-$r"
    rc=0; wait $! || rc=$?
    echo "$rc" >>"$work/exit-codes"
  ) &
  for _ in $(seq 150); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${addr[$r]}/readyz")" = 200 ] && { say "replica $r ready on ${addr[$r]} (pid $(cat "$work/pid-$r"))"; return 0; }
    sleep 0.2
  done
  say "replica $r not ready"; tail -5 "$work/replica-$r.log"; return 1
}
stop_replica() { # stop_replica A|B: SIGTERM, wait, the exit status must be 0
  local r=$1 t p
  p=$(cat "$work/pid-$r")
  t=$(date +%s.%N)
  kill -TERM "$p"
  while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
  sleep 0.1
  say "replica $r SIGTERM -> exit $(tail -1 "$work/exit-codes") after $(since "$t")s ($(grep -o 'msg=drained.*' "$work/replica-$r.log" | tail -1))"
}

# Event watchers on both buses: every oduflow_job.run publication is a salt/job/<jid>/new event.
for r in A B; do
  sfx=""; [ "$r" = B ] && sfx=_B; e="ODUFLOW_SALT_EVENTS$sfx"
  ODUFLOW_SALT_EVENTS="${!e}" "$work/oduflowctl" events --tag salt/job/ >"$work/events-$r.jsonl" 2>/dev/null &
  pids+=($!)
done
start_replica A
start_replica B
sleep 1

# 4. The applies. A POST goes to its replica, or to the other one when that one is draining or down
# (503 closed, or no connection); a retried POST of the same request id never publishes again.
post() { # post N REQUEST_ID MINION: prints "REQUEST_ID MINION HTTP_STATUS REPLICA"
  local n=$1 id=$2 m=$3 order code r
  if (( n % 2 )); then order="B A"; else order="A B"; fi
  for _ in $(seq 120); do
    for r in $order; do
      code=$(curl -s -o "$work/post-$id.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        -d "{\"request_id\":\"$id\"}" "http://${addr[$r]}/v1/requests/configure/$m" || true)
      case $code in 200|201) echo "$id $m $code $r"; return 0 ;; esac
    done
    sleep 0.5
  done
  echo "$id $m FAILED -"; return 1
}
submit() { # submit N: one apply, with a replacement when its request was cut before dispatch
  local n=$1 m=${minions[$(( $1 % NMINIONS ))]} id
  id=$(cat /proc/sys/kernel/random/uuid)
  post "$n" "$id" "$m" >>"$work/posted"
  echo "$n $id $m" >>"$work/applies"
}
: >"$work/posted"; : >"$work/applies"; : >"$work/exit-codes"
stopA=$(( APPLIES / 4 )); stopB=$(( APPLIES * 3 / 5 ))
for n in $(seq 1 "$APPLIES"); do
  submit "$n" &
  sleep "$PACE"
  if [ "$n" = "$stopA" ]; then (stop_replica A; start_replica A) & restartA=$!; fi
  if [ "$n" = "$stopB" ]; then wait "$restartA"; (stop_replica B; start_replica B) & restartB=$!; fi
done
wait "$restartB"
# Wait for the submitters (they end once their POST answered).
while [ "$(wc -l <"$work/applies")" -lt "$APPLIES" ]; do sleep 0.2; done
say "$APPLIES applies submitted; $(grep -c ' 201 ' "$work/posted") created, $(grep -c ' 200 ' "$work/posted") answered from an existing claim"
say "replica A: pid $(cat "$work/pid-A"), replica B: pid $(cat "$work/pid-B") (both restarted once)"

# 5. Every request terminal; a request cut before dispatch is replaced by a new request id.
status_of() { # status_of MINION ID -> the response JSON (from either replica)
  curl -fsS "http://${addr[A]}/v1/requests/configure/$1/$2" 2>/dev/null || curl -fsS "http://${addr[B]}/v1/requests/configure/$1/$2"
}
: >"$work/final"
replaced=0
deadline=$(( $(date +%s) + FINAL_TIMEOUT ))
while read -r n id m; do
  cur=$id
  while :; do
    resp=$(status_of "$m" "$cur")
    st=$(jq -r .status <<<"$resp")
    case $st in
      succeeded|unknown) break ;;
      failed)
        ec=$(jq -r .error_code <<<"$resp")
        if [ "$ec" = dispatcher_closed ] || [ "$ec" = lease_busy ]; then
          # Nothing was published: a replacement is a new request.
          echo "$cur $m $st $ec $(jq -r .jid <<<"$resp") replaced" >>"$work/final"
          replaced=$((replaced + 1))
          cur=$(cat /proc/sys/kernel/random/uuid)
          post "$n" "$cur" "$m" >>"$work/posted"
          continue
        fi
        break ;;
    esac
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 1
  done
  echo "$cur $m $st $(jq -r '.error_code | if . == "" then "-" else . end' <<<"$resp") $(jq -r .jid <<<"$resp") final" >>"$work/final"
done < <(sort -n "$work/applies")
say "all $APPLIES applies followed to the end ($replaced replaced after a drain cut them before dispatch)"
sleep 2 # the last "new" events

# Publications: oduflow_job.run "new" events per JID, on both buses.
jq -r 'select(.tag? and (.tag|test("^salt/job/[0-9]+/new$")) and .data.fun=="oduflow_job.run") | .data.jid' \
  "$work"/events-A.jsonl "$work"/events-B.jsonl | sort | uniq -c | awk '{print $2, $1}' >"$work/publications"
pubs() { awk -v j="$1" '$1==j {print $2; f=1} END {if (!f) print 0}' "$work/publications"; }

fail=0
finals=$(grep -c ' final$' "$work/final")
ok=$(awk '$NF=="final" && $3=="succeeded"' "$work/final" | wc -l)
say "final: $finals requests, $ok succeeded; statuses: $(awk '$NF=="final"{print $3"/"$4}' "$work/final" | sort | uniq -c | tr '\n' ' ')"
[ "$finals" = "$APPLIES" ] && [ "$ok" = "$APPLIES" ] || { echo "FAIL: not every apply succeeded"; fail=1; }
once=0; bad=0
while read -r id m st ec jid kind; do
  p=$(pubs "$jid")
  if [ "$kind" = final ]; then
    if [ "$p" = 1 ]; then once=$((once + 1)); else bad=$((bad + 1)); echo "FAIL: $id ($m, jid $jid) published $p times"; fi
  elif [ "$p" != 0 ]; then
    bad=$((bad + 1)); echo "FAIL: replaced $id ($m, jid $jid, $ec) published $p times"
  fi
done <"$work/final"
say "publications: $once of $finals final requests published exactly once; $replaced replaced requests published 0 times; violations: $bad"
[ "$bad" = 0 ] || fail=1
for r in A B; do
  n=$(curl -fsS "http://${addr[$r]}/v1/unresolved" | jq '.unresolved | length')
  say "GET /v1/unresolved on replica $r: $n"
  [ "$n" = 0 ] || { fail=1; echo "FAIL: unresolved on $r"; }
done
adopted=$(curl -fsS "http://${addr[A]}/metrics" "http://${addr[B]}/metrics" | awk '/^oduflow_adoptions_total/ {s+=$2} END {print s+0}')
for r in A B; do
  say "replica $r log: $(grep -c 'msg="worker ended with error"' "$work/replica-$r.log") workers cut by its drain, $(grep -c 'msg=drained' "$work/replica-$r.log") drain(s), $(grep -c 'level=ERROR' "$work/replica-$r.log") error lines"
done
say "adoptions after the restarts (oduflow_adoptions_total of the running replicas): $adopted"
say "replica exit statuses on SIGTERM: $(tr '\n' ' ' <"$work/exit-codes")"
grep -qv '^0$' "$work/exit-codes" && { echo "FAIL: a replica did not exit 0"; fail=1; }
grep -h 'level=ERROR' "$work"/replica-*.log | head -5 || true
if [ "$fail" = 0 ]; then say "PASS"; else say "FAIL (logs kept in $work)"; KEEP=1; fi
exit "$fail"
