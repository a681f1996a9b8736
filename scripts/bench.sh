#!/usr/bin/env bash
# bench.sh - the project's benchmark command. Absolute times on shared 2-core machines are noisy, so
# every row is measured as ROUNDS interleaved rounds in ONE run (ours, anchor, ours, anchor, ...) and
# reported as the median of the per-round figures, their spread (min-max) and the ratio of the two
# medians. The anchors are Salt's own Python client against the live lab master, the lab minion, and
# this disk's fsync floor, taken from the shared anchors kit ($ODUFLOW_SHARED/bench, default
# ../shared/bench: its anchors_py.py sub-commands, one round each, and its fsyncfloor program).
# Ours is bench/cmd/benchrun (one round of one row per call), bench/cmd/benchreader (the Go event
# reader that joins the anchors' event rounds) and bench/cmd/etcdbench (the etcd rows), all in the
# nested module bench/ (its own go.mod: the embedded etcd server stays out of the main module's graph).
#
# Rows (see scripts/bench_report.py for the goals):
#   publish_rtt   benchrun publish_rtt -reuse   vs  anchors_py.py publish_rtt (run_job and channel);
#                 benchrun publish_breakdown    (ours only: traced phases, fresh and reused connections)
#   throughput    benchrun throughput -reuse, 1 2 4 8 16 32 publishers (the saturation curve; 4 and 16
#                 are the goal rows), and 4 without reuse  vs  anchors_py.py throughput --procs 4 and 8
#                 --jid-policy fixed; every ours round also reports the master's, the minion's, its own
#                 and the machine's CPU use
#   e2e_ping      benchrun e2e_ping             vs  anchors_py.py e2e_ping (LocalClient.cmd); and
#                 benchrun e2e_ping -raw (the same jobs traced: a second, bare bus connection and the
#                 master's <jid> event place each part of the overhead on the client's or the master's side)
#   events        benchrun decode; benchreader  vs  anchors_py.py event_rate (Salt's reader, Salt unpack,
#                 and its "recv" reader: what the master's publisher delivers, the ceiling of any reader)
#   start         benchrun start_idle           vs  fsyncfloor
#   custom        benchrun custom               (ours only: the 5 ms CPU goal)
#   client        clientbench (the general client, salt/saltcmd): test.ping on 10 and 20 fleet minions vs
#                 LocalClient.cmd and cmd_iter (first and last return); cmd.run 'sleep 1' on 20, -b 5, vs
#                 LocalClient.cmd_batch; the lost row (test.ping on the fleet while fleet minions restart at
#                 random: returns delivered and minions named vs cmd_iter). Needs a fleet (saltlab.sh fleet 20)
#                 and root; not in the default rows (about 40 minutes): --rows client. It starts with
#                 client_inproc, which needs no lab (about 30 s, alone: --rows client_inproc): 10,000
#                 simulated minions in the same process answer one test.ping run (clientbench -rows inproc:
#                 returns/s, CPU per return, peak heap)  vs  the event stream's decode rate of the same
#                 captured bytes, in the same round
#   rollout       benchrun rollout: configure on every fleet minion at once through the dispatcher (40 with
#                 saltlab.sh fleet 40), first Start -> last terminal result, each request proven and published
#                 once  vs  benchrun rollout_salt: `salt -L <the fleet> state.apply roles.client_stack` (Salt's
#                 own CLI, one publish) in the same round; a third run per round: the same rollout after a
#                 readiness Ping of the fleet with Timers.CapabilityReuse 60 s. Each side's CPU and the master's
#                 and minions' are reported. Needs the lab with a fleet (ODUFLOW_SALT_FLEET), else skipped.
#   inflight      benchrun inflight             (the simulator in a child process; its own publish
#                                                rate, measured in the same round, is the anchor)
#   etcd          etcdbench latency             vs  one etcd transaction / one etcd read, same server
#                 etcdbench inflight            (5,000 in flight on etcd: heap per request, RSS)
#
# Usage: bash scripts/bench.sh [-o DIR] [--quick] [--rows a,b,...] [--publish]
#   -o DIR     keep everything in DIR: raw/ (one JSON per round), report.md, summary.json
#   --quick    2 short rounds (a smoke test of the command, not numbers to publish)
#   BENCH_LAB_KIT=<kit> measures the lab rows against that lab (e.g. the later Salt's saltlab-next.sh)
#   --rows     only these rows (default: all)
#   --publish  also write the table into BENCHMARKS.md, between its bench_report.py markers (the
#              analysis around it is written by hand); refused with --quick or --rows
# BENCH_ROUNDS overrides the number of rounds; BENCH_BUDGET_S (default 870 s, quick 600 s) bounds the
# whole run: the in-flight row, run last, does only the rounds that fit.
# Without a running lab the lab rows are skipped and said to be missing.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="" QUICK=0 PUBLISH=0 ROWS_SET=0 ROWS="publish_rtt,throughput,e2e_ping,e2e_configure,rollout,events,start,custom,inflight,etcd"
while [ $# -gt 0 ]; do
  case "$1" in
    -o) OUT="${2:?-o needs a directory}"; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --rows) ROWS="${2:?--rows needs a list}"; ROWS_SET=1; shift 2 ;;
    --publish) PUBLISH=1; shift ;;
    *) echo "usage: bash scripts/bench.sh [-o DIR] [--quick] [--rows a,b,...] [--publish]" >&2; exit 2 ;;
  esac
done
if [ "$PUBLISH" = 1 ] && { [ "$QUICK" = 1 ] || [ "$ROWS_SET" = 1 ]; }; then
  echo "bench.sh: --publish writes the whole table: a full run only (no --quick, no --rows)" >&2
  exit 2
fi
OUT="${OUT:-$(mktemp -d /tmp/oduflow-bench.XXXXXX)}"
rm -rf "$OUT/raw" # a reused -o DIR must not mix an earlier run's rounds into this report
mkdir -p "$OUT/raw" "$OUT/bin"
OUT="$(cd "$OUT" && pwd)"
SHARED="${ODUFLOW_SHARED:-../shared}"
ANCH="$SHARED/bench/anchors_py.py"
# BENCH_LAB_KIT: the lab kit whose master the lab rows measure (default the 3006.0 lab's saltlab.sh;
# saltlab-next.sh for the later Salt: run the publish and event rows once per lab for a column each).
LABSH="${BENCH_LAB_KIT:-$SHARED/lab/saltlab.sh}"
PY=/usr/bin/python3
say() { echo "bench: $(date -u +%H:%M:%S) $*" >&2; }
want() { [[ ",$ROWS," == *",$1,"* ]]; }

if [ "$QUICK" = 1 ]; then
  ROUNDS=2; N_RTT=8; TP_S=2; N_E2E=4; N_EV=3000; N_START=50; N_FS=100; N_CUSTOM=50; N_DECODE=50000
  N_INFLIGHT=1000; N_STATUS=2000; N_RATE=500; N_LOST=4
else
  ROUNDS=5; N_RTT=20; TP_S=3; N_E2E=10; N_EV=10000; N_START=200; N_FS=300; N_CUSTOM=200; N_DECODE=300000
  N_INFLIGHT=10000; N_STATUS=20000; N_RATE=1000; N_LOST=200
fi
ROUNDS="${BENCH_ROUNDS:-$ROUNDS}"
T_START=$(date +%s)
BUDGET="${BENCH_BUDGET_S:-$([ "$QUICK" = 1 ] && echo 600 || echo 870)}"
# The measured processes run without a memory limit (the RSS row is the process's own peak).
unset GOMEMLIMIT GOGC

say "building benchrun, benchreader, fsyncfloor ..."
(cd bench && go build -o "$OUT/bin/benchrun" ./cmd/benchrun) || exit 1
(cd bench && go build -o "$OUT/bin/benchreader" ./cmd/benchreader) || exit 1
if [ -f "$SHARED/bench/fsyncfloor/main.go" ]; then
  (cd "$SHARED/bench/fsyncfloor" && go build -o "$OUT/bin/fsyncfloor" main.go) || say "fsyncfloor did not build"
fi
BR="$OUT/bin/benchrun"
# The claim directories of the start and inflight rows are left by each round (benchrun -leave-dir) and
# removed once, when the run ends: on an ext4 without a journal (this machine's root) every inode
# allocated within about 30 s of many removals scans past the recently freed ones, so removing a round's
# claims (130,000 files for 10,000 in flight) right before the next round made it pay for that cleanup.
CLAIMS="$(mktemp -d /var/cache/oduflow-bench-claims.XXXXXX)" || exit 1
trap 'rm -rf "$CLAIMS"' EXIT

lab_up=0
labstatus="$( [ -f "$LABSH" ] && bash "$LABSH" status 2>/dev/null || true)"
if grep -q "^master: running" <<<"$labstatus" && grep -q "^minion: running" <<<"$labstatus" && [ -f "$ANCH" ]; then
  lab_up=1
  eval "$(bash "$LABSH" env)"
  LAB="${ODUFLOW_SALTLAB_DIR:-/srv/saltlab}"
  export SALTLAB_DIR="$LAB" ODUFLOW_SALT_MINION PYTHONPATH="$LAB/src:$LAB/pylib"
else
  say "no running lab (or no anchors kit): the lab rows are skipped"
fi

failed=0
# step NAME LIMIT_S CMD...: stdout -> raw/NAME.json, stderr -> raw/NAME.err
step() {
  local name="$1" limit="$2" rc
  shift 2
  timeout --kill-after=10 "$limit" "$@" >"$OUT/raw/$name.json" 2>"$OUT/raw/$name.err"
  rc=$?
  if [ "$rc" != 0 ]; then
    failed=1
    say "$name FAILED (rc $rc): $(grep -v '^\s*$' "$OUT/raw/$name.err" | tail -1)"
    rm -f "$OUT/raw/$name.json"
  fi
  return 0
}
drain() { [ "$lab_up" = 1 ] && step "drain.$1" 200 "$PY" "$ANCH" drain --timeout 180; return 0; }

# machine facts for the report header
{
  echo "started_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "cpus=$(nproc)"
  echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "mem_total_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 ))"
  echo "kernel=$(uname -r)"
  echo "go=$(go env GOVERSION)"
  echo "rounds=$ROUNDS"
  echo "quick=$QUICK"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo +dirty)"
} >"$OUT/raw/machine.env"
[ "$lab_up" = 1 ] && step meta 60 "$PY" "$ANCH" meta && drain 0

# --- publish round trip and its breakdown (publish_rtt) ---
# Ours runs with salt.WithConnectionReuse (a PONG-proven idle connection, else a fresh one): the
# configuration a long-lived caller uses. publish_breakdown traces the phases of fresh and reused
# publishes in the same round (one reused JID: the minion runs it once, nothing to drain).
if [ "$lab_up" = 1 ] && want publish_rtt; then
  say "publish_rtt: $ROUNDS rounds of $N_RTT publishes (each round's jobs are drained) + the breakdown ..."
  for r in $(seq 1 "$ROUNDS"); do
    step "publish_rtt.ours.$r" 120 "$BR" publish_rtt -n "$N_RTT" -reuse
    step "publish_breakdown.ours.$r" 120 "$BR" publish_breakdown -n "$N_RTT"
    drain "publish_rtt.$r"
    step "publish_rtt.anchor.$r" 300 "$PY" "$ANCH" publish_rtt --n "$N_RTT" --warmup 2 --drain-timeout 180
  done
fi

# --- publish throughput and the master's saturation curve (throughput) ---
# One Client with connection reuse at 1..32 publishers (one reused JID each, as the anchor), one
# round without reuse at 4, then Python's run_job at 4 and 8 processes.
if [ "$lab_up" = 1 ] && want throughput; then
  say "throughput: $ROUNDS rounds of ${TP_S}s (ours 1-32 publishers, 4 without reuse; Python 4 and 8 processes) ..."
  for r in $(seq 1 "$ROUNDS"); do
    for k in 1 2 4 8 16 32; do
      step "throughput_curve$k.ours.$r" 120 "$BR" throughput -publishers "$k" -duration "${TP_S}s" -reuse
    done
    step "throughput4fresh.ours.$r" 120 "$BR" throughput -publishers 4 -duration "${TP_S}s"
    drain "throughput.$r"
    step "throughput.anchor.$r" 240 "$PY" "$ANCH" throughput --procs 4 --duration "$TP_S" --jid-policy fixed --drain-timeout 120
    drain "throughput8.$r"
    step "throughput8.anchor.$r" 240 "$PY" "$ANCH" throughput --procs 8 --duration "$TP_S" --jid-policy fixed --drain-timeout 120
  done
fi

if [ "$lab_up" = 1 ] && want e2e_ping; then
  say "e2e_ping: $ROUNDS rounds of $N_E2E test.ping jobs ..."
  for r in $(seq 1 "$ROUNDS"); do
    drain "e2e.$r"
    step "e2e.ours.$r" 180 "$BR" e2e_ping -n "$N_E2E"
    step "e2e_trace.ours.$r" 180 "$BR" e2e_ping -n "$N_E2E" -raw
    step "e2e.anchor.$r" 240 "$PY" "$ANCH" e2e_ping --n "$N_E2E" --warmup 2
  done
fi

# --- row e2e_configure (ours only) --------------------------------------------------------------------
# benchrun configure: N_CFG dispatched configure requests on the lab minion per round (one warm-up; a lab
# minion with a profile table of its own, e.g. a host-named one, gets that table and its first sls profile),
# Start -> committed terminal result, split into the minion's apply (the run job's new -> ret span), the
# capability check, the receipt proof and the rest (goal: the rest <= 20 ms). Rounds interleave with drains
# and the fsync floor (one durable record write; the critical path makes four: index, claim, intent, terminal).
if [ "$lab_up" = 1 ] && want e2e_configure; then
  N_CFG=$([ "$QUICK" = 1 ] && echo 3 || echo 10)
  say "e2e_configure: $ROUNDS rounds of $N_CFG dispatched configure requests ..."
  for r in $(seq 1 "$ROUNDS"); do
    drain "configure.$r"
    step "configure.ours.$r" 300 "$BR" configure -n "$N_CFG" -dir /var/cache
    [ -x "$OUT/bin/fsyncfloor" ] && step "cfgfsync.anchor.$r" 120 "$OUT/bin/fsyncfloor" -dir /var/cache -n 100 -max-seconds 30
  done
fi
# --- end of row e2e_configure --------------------------------------------------------------------------

# --- row rollout: 40 fleet minions, the dispatcher vs salt -L state.apply ------------------------------
if want rollout; then
  if [ "$lab_up" = 1 ] && [ -n "${ODUFLOW_SALT_FLEET:-}" ]; then
    say "rollout: $ROUNDS rounds of configure on $(tr ',' '\n' <<<"$ODUFLOW_SALT_FLEET" | wc -l) fleet minions vs salt -L state.apply ..."
    for r in $(seq 1 "$ROUNDS"); do
      step "rollout.ours.$r" 400 "$BR" rollout -dir /var/cache
      step "rollout.anchor.$r" 400 "$BR" rollout_salt
      step "rollout_reuse.ours.$r" 400 "$BR" rollout -dir /var/cache -ping-first -capability-reuse 60s
    done
  else
    say "rollout: skipped (needs the lab with a fleet: saltlab.sh fleet 40, ODUFLOW_SALT_FLEET)"
    echo "rollout_skipped=no lab fleet (ODUFLOW_SALT_FLEET unset)" >>"$OUT/raw/machine.env"
  fi
fi
# --- end of row rollout ----------------------------------------------------------------------------------

if want events; then
  say "events: $ROUNDS rounds (decode from memory; live-bus readers on $N_EV replayed events) ..."
  for r in $(seq 1 "$ROUNDS"); do
    step "decode.ours.$r" 120 "$BR" decode -n "$N_DECODE"
    if [ "$lab_up" = 1 ]; then
      BENCHREADER_LOG="$OUT/raw/reader.ours.$r.jsonl" step "events.anchor.$r" 300 "$PY" "$ANCH" event_rate \
        --n "$N_EV" --reps 1 --event test_ping --readers recv,salt --extra-reader "extra=$OUT/bin/benchreader"
    fi
  done
fi

if want start; then
  say "start: $ROUNDS rounds of $N_START idle Starts + 100 concurrent, and the fsync floor ..."
  for r in $(seq 1 "$ROUNDS"); do
    step "start.ours.$r" 180 "$BR" start_idle -n "$N_START" -concurrent 100 -dir "$CLAIMS" -leave-dir
    [ -x "$OUT/bin/fsyncfloor" ] && step "fsync.anchor.$r" 120 "$OUT/bin/fsyncfloor" -dir /var/cache -n "$N_FS" -max-seconds 60
  done
fi

if want custom; then
  say "custom: $ROUNDS rounds of $N_CUSTOM compilations ..."
  for r in $(seq 1 "$ROUNDS"); do
    step "custom.ours.$r" 120 "$BR" custom -n "$N_CUSTOM"
  done
fi

if want inflight; then
  say "inflight: $ROUNDS rounds of $N_INFLIGHT requests in flight (simulator in a child process) ..."
  # The request locks and client leases are byte ranges of one open lock file per claim store, so the
  # in-flight requests hold no descriptor each: n is not capped by RLIMIT_NOFILE any more.
  n="$N_INFLIGHT"
  # This row is the slowest (minutes per round on a loaded machine): a round starts only while the
  # whole run stays within its time budget (BENCH_BUDGET_S), and the report says how many ran.
  est=0
  for r in $(seq 1 "$ROUNDS"); do
    left=$(( T_START + BUDGET - $(date +%s) ))
    if [ "$r" -gt 1 ] && [ "$left" -lt "$est" ]; then
      say "inflight: $(( r - 1 )) rounds; the next would end after the ${BUDGET}s budget"
      echo "inflight_rounds_cut=$(( r - 1 )) of $ROUNDS (time budget ${BUDGET}s)" >>"$OUT/raw/machine.env"
      break
    fi
    t0=$(date +%s)
    step "inflight.ours.$r" "$(( left > 120 ? left : 120 ))" "$BR" inflight -n "$n" -status "$N_STATUS" \
      -rate-publishes "$N_RATE" -dir "$CLAIMS" -leave-dir
    est=$(( $(date +%s) - t0 ))
  done
fi

# ---- etcd row group (begin) ---------------------------------------------------------------------
# etcdbench lives in the nested module bench/ (the embedded etcd server's dependencies stay out of
# the main module). Each round starts its own etcd member in a child process
# (fsync on, data in /var/cache). latency: per round, 200 samples each of Start of a new request, one
# etcd transaction of the claim-create shape, Status of a running request and one etcd read of its claim,
# interleaved sample by sample, so each ratio compares medians of the same round and run. inflight:
# 5,000 requests held on one dispatcher on etcd (the simulator in another child process). The block has
# its own time budget (BENCH_ETCD_BUDGET_S, default 600 s from its start): the in-flight rounds, after
# all latency rounds, do only the rounds that fit.
if want etcd; then
  if [ "$QUICK" = 1 ]; then N_ETCD=50; N_ETCD_INFLIGHT=1000; else N_ETCD=200; N_ETCD_INFLIGHT=5000; fi
  say "etcd: building etcdbench (nested module bench/) ..."
  if (cd bench && go build -o "$OUT/bin/etcdbench" ./cmd/etcdbench); then
    EB="$OUT/bin/etcdbench"
    E_START=$(date +%s)
    E_BUDGET="${BENCH_ETCD_BUDGET_S:-600}"
    say "etcd: $ROUNDS rounds of $N_ETCD interleaved Start/txn/Status/read samples ..."
    for r in $(seq 1 "$ROUNDS"); do
      step "etcd.latency.$r" 300 "$EB" latency -n "$N_ETCD" -dir /var/cache
    done
    say "etcd: up to $ROUNDS rounds of $N_ETCD_INFLIGHT requests in flight ..."
    est=0
    for r in $(seq 1 "$ROUNDS"); do
      left=$(( E_START + E_BUDGET - $(date +%s) ))
      if [ "$r" -gt 1 ] && [ "$left" -lt "$est" ]; then
        echo "etcd_inflight_rounds_cut=$(( r - 1 )) of $ROUNDS (time budget ${E_BUDGET}s)" >>"$OUT/raw/machine.env"
        break
      fi
      t0=$(date +%s)
      step "etcd.inflight.$r" 600 "$EB" inflight -n "$N_ETCD_INFLIGHT" -dir /var/cache
      est=$(( $(date +%s) - t0 ))
    done
  else
    failed=1
    say "etcd: etcdbench did not build"
  fi
fi
# ---- etcd row group (end) -----------------------------------------------------------------------

# ---- client row group: the general client (salt/saltcmd) against LocalClient on the lab's fleet ----------
# One clientbench process runs every round of the group (its Python LocalClient stays up between rounds); its
# table goes to client.md and is appended to report.md; raw/client.rounds holds every round (JSON).
if want client || want client_inproc; then
  if (cd bench && go build -o "$OUT/bin/clientbench" ./cmd/clientbench); then
    say "client_inproc: 10,000 simulated minions in-process ($ROUNDS rounds, no lab) ..."
    timeout --kill-after=10 600 "$OUT/bin/clientbench" -rows inproc -rounds "$ROUNDS" \
      -o "$OUT/raw/client_inproc.rounds" >"$OUT/client_inproc.md" 2>"$OUT/raw/client_inproc.err" ||
      { failed=1; say "client_inproc FAILED: $(grep -v '^\s*$' "$OUT/raw/client_inproc.err" | tail -1)"; }
  else
    failed=1
    say "client_inproc: clientbench did not build"
  fi
fi
if want client; then
  if [ "$lab_up" != 1 ] || [ -z "${ODUFLOW_SALT_FLEET:-}" ]; then
    say "client: needs the lab with a fleet (saltlab.sh fleet 20): skipped"
  elif (cd bench && go build -o "$OUT/bin/clientbench" ./cmd/clientbench); then
    say "client: ping 10 and 20, batch -b 5 ($ROUNDS rounds), lost ($N_LOST runs per client, at most 35 min) ..."
    timeout --kill-after=10 3000 "$OUT/bin/clientbench" -rounds "$ROUNDS" -lost-runs "$N_LOST" -lost-budget 35m \
      -restart-every 15s -lost-timeout 5s -o "$OUT/raw/client.rounds" >"$OUT/client.md" 2>"$OUT/raw/client.err" ||
      { failed=1; say "client FAILED: $(grep -v '^\s*$' "$OUT/raw/client.err" | tail -1)"; }
  else
    failed=1
    say "client: clientbench did not build"
  fi
fi
# ---- client row group (end) ---------------------------------------------------------------------

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/raw/machine.env"
echo "ended_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$OUT/raw/machine.env"
if [ "$PUBLISH" = 1 ]; then
  "$PY" scripts/bench_report.py "$OUT" --into BENCHMARKS.md >"$OUT/report.md" || { say "report failed"; exit 1; }
  say "the table is in BENCHMARKS.md: bring its analysis up to date by hand"
else
  "$PY" scripts/bench_report.py "$OUT" >"$OUT/report.md" || { say "report failed"; exit 1; }
fi
[ -s "$OUT/client_inproc.md" ] && { printf '\n### client_inproc (clientbench -rows inproc)\n'; cat "$OUT/client_inproc.md"; } >>"$OUT/report.md"
[ -s "$OUT/client.md" ] && { printf '\n### client (clientbench)\n\n'; cat "$OUT/client.md"; } >>"$OUT/report.md"
cat "$OUT/report.md"
say "raw results, report.md and summary.json in $OUT"
[ "$failed" = 0 ] || say "some steps failed (raw/*.err)"
exit "$failed"
