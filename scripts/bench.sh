#!/usr/bin/env bash
# bench.sh - the project's benchmark command. It measures, in ONE run on this machine:
#   1. the anchors (../shared/bench/anchors.sh): Salt's own Python client against the lab
#      master, the minion, the disk's fsync floor; our Go event reader joins its event rounds;
#   2. our Go benchmarks (go test -bench) against the simulator and, when the lab's
#      ODUFLOW_SALT_* variables are set, against the real master;
# and prints a Markdown table of ratios (ours / anchor), because absolute times on these
# shared 2-core machines are noisy. Without a running lab it still runs the Go benchmarks
# and the fsync floor, and says that the Salt anchors are missing.
#
# Usage: bash scripts/bench.sh [-o DIR] [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="" QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    -o) OUT="$2"; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "usage: bash scripts/bench.sh [-o DIR] [--quick]" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-$(mktemp -d /tmp/oduflow-bench.XXXXXX)}"
mkdir -p "$OUT"
SHARED="${ODUFLOW_SHARED:-../shared}"
LABSH="$SHARED/lab/saltlab.sh"
say() { echo "bench: $*" >&2; }

go build -o "$OUT/benchreader" ./internal/benchreader

lab_up=0
labstatus="$( [ -f "$LABSH" ] && bash "$LABSH" status 2>/dev/null || true)"
if grep -q "^minion: running" <<<"$labstatus" && grep -q "^master: running" <<<"$labstatus"; then
  lab_up=1
  eval "$(bash "$LABSH" env)"
fi

if [ "$lab_up" = 1 ] && [ -f "$SHARED/bench/anchors.sh" ]; then
  say "anchors (Salt's Python client on the lab, about 3 minutes) ..."
  qflag=(); [ "$QUICK" = 1 ] && qflag=(--quick)
  ANCHORS_EVENT_READER="$OUT/benchreader" bash "$SHARED/bench/anchors.sh" "${qflag[@]}" -o "$OUT/anchors.json" >/dev/null
else
  say "no running lab: Salt anchors skipped; measuring the fsync floor alone"
  if [ -f "$SHARED/bench/fsyncfloor/main.go" ]; then
    (cd "$SHARED/bench/fsyncfloor" && go run main.go -dir /var/cache) > "$OUT/fsyncfloor.json" || true
  fi
  unset ODUFLOW_SALT_MASTER ODUFLOW_SALT_EVENTS ODUFLOW_SALT_KEY_FILE
fi

count=3; benchtime=1s
[ "$QUICK" = 1 ] && count=1 && benchtime=200ms
say "go test -bench (count $count) ..."
go test -run '^$' -bench . -benchmem -count "$count" -benchtime "$benchtime" -timeout 30m \
  ./salt/ ./receipt/ ./profiles/ 2>&1 | tee "$OUT/go-bench.txt" >&2
# The dispatcher benchmarks write claims under TMPDIR: put it on the file system the fsync floor
# measured (/var/cache). BenchmarkDispatcher holds 5,000 requests in flight: one set is enough.
benchtmp="$(mktemp -d /var/cache/oduflow-bench.XXXXXX)"
trap 'rm -rf "$benchtmp"' EXIT
TMPDIR="$benchtmp" go test -run '^$' -bench 'ClaimCreate|StartNewIdle' -benchmem -count "$count" -benchtime "$benchtime" \
  -timeout 30m ./oduflow/ 2>&1 | tee -a "$OUT/go-bench.txt" >&2
TMPDIR="$benchtmp" go test -run '^$' -bench 'Dispatcher' -benchmem -count 1 -benchtime "$benchtime" -timeout 30m -v \
  ./oduflow/ 2>&1 | tee -a "$OUT/go-bench.txt" >&2

python3 scripts/bench_report.py "$OUT" | tee "$OUT/report.md"
say "raw results in $OUT"
