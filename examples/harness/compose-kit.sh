#!/usr/bin/env bash
# The lab kit's daemon commands, on the compose harness's containers: what the live receipt test
# runs (ODUFLOW_LAB_DISRUPTIVE=1 ODUFLOW_SALTLAB_SH=<this file>) to restart the minion and to take
# the master away during an apply. run-integration.sh --compose sets both.
#
# Usage: bash examples/harness/compose-kit.sh stop master|minion | restart master|minion | status
# ENGINE: podman (default) or docker.
set -euo pipefail
ENGINE=${ENGINE:-podman}
MINION=client-7c9e6679-7425-40de-944b-e07fc1f90ae7

die() { echo "compose-kit: $*" >&2; exit 2; }
container() {
  case "$1" in
    master) echo oduflow-harness-salt-master ;;
    minion) echo oduflow-harness-salt-minion ;;
    *) die "say master or minion, not '$1'" ;;
  esac
}
running() { [ "$($ENGINE container inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ]; }
pings() { $ENGINE exec oduflow-harness-salt-master salt "$MINION" test.ping --out=txt -t 5 2>/dev/null | grep -q ': True'; }
wait_ping() {
  local i
  running oduflow-harness-salt-master && running oduflow-harness-salt-minion || return 0
  for i in $(seq 1 60); do pings && return 0; sleep 2; done
  die "the minion did not answer test.ping within 120 s"
}

case "${1:-}:${2:-}" in
  stop:master)
    # At once (SIGKILL, as a crashed host): the live receipt test stops the master right after
    # the job's first state starts; a graceful stop (seconds under load) lets the return through.
    c=$(container master)
    $ENGINE kill -s KILL "$c" >/dev/null
    for _ in $(seq 1 40); do running "$c" || break; sleep 0.25; done
    echo "stopped master" ;;
  stop:minion)
    $ENGINE stop -t 10 "$(container minion)" >/dev/null
    echo "stopped minion" ;;
  restart:master|restart:minion)
    c=$(container "$2")
    if running "$c"; then $ENGINE restart -t 10 "$c" >/dev/null; else $ENGINE start "$c" >/dev/null; fi
    wait_ping
    echo "restarted $2" ;;
  status:)
    for n in master minion; do
      if running "$(container "$n")"; then echo "$n: running"; else echo "$n: not running"; fi
    done
    running oduflow-harness-salt-master && { pings && echo "test.ping: True" || echo "test.ping: no answer"; } ;;
  *) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
