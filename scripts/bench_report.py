#!/usr/bin/env python3
"""Turn one bench.sh run (DIR/raw/<row>.<ours|anchor>.<round>.json) into DIR/summary.json and a
Markdown table on stdout (report.md).

Usage: bench_report.py DIR [--into FILE]
  --into FILE  also put the table in FILE (BENCHMARKS.md), replacing what stands between the lines
               <!-- bench_report.py: begin --> and <!-- bench_report.py: end --> (both must be there
               once, in that order; FILE is left as it was otherwise)

Per row: the figure of each round (a round's own median, rate or peak), the median of those
figures and their spread (min-max over the rounds), for ours and for the anchor measured in the
same run; ratio = median ours / median anchor; the row's goal and whether it is met.
summary.json maps each row key to {"ours": median, "anchor": median or null} in the row's unit
(times in the unit the row names, rates per second). Standard library only.
"""
import glob
import json
import os
import re
import statistics
import sys

args = sys.argv[1:]
into = None
if len(args) == 3 and args[1] == "--into":
    into = args[2]
elif len(args) != 1:
    sys.exit("usage: bench_report.py DIR [--into FILE]")
out = args[0]
BEGIN, END = "<!-- bench_report.py: begin -->", "<!-- bench_report.py: end -->"
raw = os.path.join(out, "raw")


def rounds(prefix):
    """{round: parsed JSON} of raw/<prefix>.<round>.json."""
    res = {}
    for p in glob.glob(os.path.join(raw, prefix + ".*.json")):
        m = re.match(re.escape(prefix) + r"\.(\d+)\.json$", os.path.basename(p))
        if not m:
            continue
        try:
            with open(p) as f:
                lines = [ln for ln in f.read().splitlines() if ln.strip()]
            res[int(m.group(1))] = json.loads(lines[-1])
        except (OSError, ValueError, IndexError):
            pass
    return res


def dig(d, *path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def series(prefix, fn):
    vals = []
    for _, d in sorted(rounds(prefix).items()):
        try:
            v = fn(d)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            v = None
        if isinstance(v, (int, float)):
            vals.append(float(v))
    return vals


def reader_series():
    """Our event reader's rate (events/s wall) and events per CPU second, per round."""
    wall, cpu = [], []
    for p in sorted(glob.glob(os.path.join(raw, "reader.ours.*.jsonl"))):
        with open(p) as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if d.get("elapsed_s"):
                    wall.append(d["count"] / d["elapsed_s"])
                if d.get("cpu_s"):
                    cpu.append(d["count"] / d["cpu_s"])
    return wall, cpu


def reader_util():
    """Our event reader's CPU time / wall time per round (below 1: it waited on the socket)."""
    out = []
    for p in sorted(glob.glob(os.path.join(raw, "reader.ours.*.jsonl"))):
        with open(p) as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if d.get("elapsed_s") and d.get("cpu_s") is not None:
                    out.append(d["cpu_s"] / d["elapsed_s"])
    return out


def reader_bytes_per_read():
    out = []
    for p in sorted(glob.glob(os.path.join(raw, "reader.ours.*.jsonl"))):
        with open(p) as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if d.get("reads"):
                    out.append(d["read_bytes"] / d["reads"])
    return out


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(v):
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def cell(xs):
    if not xs:
        return "n/a"
    s = fmt(med(xs))
    if len(xs) > 1:
        s += f" ({fmt(min(xs))}-{fmt(max(xs))})"
    return s


rows = []      # (key, label, unit, ours list, anchor list, goal text, met, note)
summary = {}


def row(key, label, unit, ours, anchor=None, goal=None, note=""):
    """goal: (kind, limit, text) with kind 'ratio<=', 'ratio>=', 'ours<='; None = no goal."""
    mo, ma = med(ours), med(anchor or [])
    ratio = mo / ma if (mo is not None and ma) else None
    met = None
    if goal:
        kind, limit, _ = goal
        v = ratio if kind.startswith("ratio") else mo
        if v is not None:
            met = v <= limit if kind.endswith("<=") else v >= limit
    rows.append((key, label, unit, ours, anchor, ratio, goal, met, note))
    summary[key] = {"ours": None if mo is None else round(mo, 4), "anchor": None if ma is None else round(ma, 4)}


# --- publish round trip and its breakdown ---
pub_ours = series("publish_rtt.ours", lambda d: d["ms"]["median"])
pub_reuse = "ours: WithConnectionReuse" if any(d.get("reuse") for d in rounds("publish_rtt.ours").values()) else "ours: a fresh connection per publish"
row("publish_rtt_vs_persistent_channel", "publish round trip, real master (send -> publish reply)", "ms",
    pub_ours, series("publish_rtt.anchor", lambda d: d["channel_ms"]["median"]),
    ("ratio<=", 0.9, "<= 0.9x"), "anchor: Salt's ReqChannel.send on one persistent channel; " + pub_reuse)
row("publish_rtt_vs_run_job", "publish round trip, real master (send -> publish reply)", "ms",
    pub_ours, series("publish_rtt.anchor", lambda d: d["run_job_ms"]["median"]),
    ("ratio<=", 0.6, "<= 0.6x"), "anchor: Salt's LocalClient.run_job (new REQ socket per publish); " + pub_reuse)


def phases(mode):
    """'phase a us, phase b us, ...': the median over rounds of each traced phase's round median."""
    keys = []
    for d in rounds("publish_breakdown.ours").values():
        for k in (d.get(mode + "_us") or {}):
            if k not in keys and k not in ("total", "client_share"):
                keys.append(k)
    parts = []
    for k in keys:
        v = med(series("publish_breakdown.ours", lambda d, k=k: d[mode + "_us"][k]))
        parts.append("%s %s" % (k, fmt(v)))
    return ", ".join(parts)


for mode, label in (("reused", "reused connection (WithConnectionReuse)"), ("fresh", "fresh connection per publish")):
    row("publish_rtt_breakdown" + ("" if mode == "reused" else "_fresh"),
        "publish round trip traced, %s: the client's own share (total minus send -> reply)" % label, "us",
        series("publish_breakdown.ours", lambda d, m=mode: d[m + "_us"]["client_share"]), None,
        ("ours<=", 300.0, "<= 300 us") if mode == "reused" else None,
        "phases (us, medians): %s; total %s ms" % (phases(mode), cell(series("publish_breakdown.ours", lambda d, m=mode: d[m + "_total_ms"]["median"]))))

# --- publish throughput and the master's saturation curve ---
tp_anchor = series("throughput.anchor", lambda d: d["per_s"])


def cpu_note(prefix):
    s = lambda k: cell(series(prefix, lambda d, k=k: d["cpu"][k]))
    return ("master %s cores (%s ms CPU per publish), minion %s, this client %s cores (%s ms per publish), machine busy %s"
            % (s("master_cores"), s("master_cpu_ms_per_publish"), s("minion_cores"), s("client_cores"),
               s("client_cpu_ms_per_publish"), s("machine_busy_share")))


row("publish_throughput_vs_python_4_clients", "publish throughput, one Client (reuse), 4 publishers", "publishes/s",
    series("throughput_curve4.ours", lambda d: d["per_s"]), tp_anchor, ("ratio>=", 2.0, ">= 2x"),
    "anchor: 4 Python processes of run_job; one reused JID per publisher on both sides; " + cpu_note("throughput_curve4.ours"))
row("publish_throughput_16_vs_python_4_clients", "publish throughput, one Client (reuse), 16 publishers", "publishes/s",
    series("throughput_curve16.ours", lambda d: d["per_s"]), tp_anchor, ("ratio>=", 2.0, ">= 2x"),
    "anchor: the same Python 4-process figure; " + cpu_note("throughput_curve16.ours"))
row("publish_throughput_4_fresh_vs_python_4_clients", "publish throughput, one Client without reuse, 4 publishers", "publishes/s",
    series("throughput4fresh.ours", lambda d: d["per_s"]), tp_anchor, None,
    "anchor: the same Python 4-process figure; " + cpu_note("throughput4fresh.ours"))
row("publish_throughput_python_8_clients", "publish throughput, Python run_job, 8 processes", "publishes/s",
    series("throughput8.anchor", lambda d: d["per_s"]), tp_anchor, None,
    "ratio: 8 processes / 4 processes (does Python gain from more processes?)")
for k in (1, 2, 4, 8, 16, 32):
    row("publish_throughput_curve_%d" % k, "saturation curve: one Client (reuse), %d publishers" % k, "publishes/s",
        series("throughput_curve%d.ours" % k, lambda d: d["per_s"]), tp_anchor, None,
        "latency median %s ms; %s" % (cell(series("throughput_curve%d.ours" % k, lambda d: d["latency_ms"]["median"])),
                                      cpu_note("throughput_curve%d.ours" % k)))

# end to end
e2e = rounds("e2e.anchor")
py_total = series("e2e.anchor", lambda d: d["ms"]["median"])
py_over = series("e2e.anchor", lambda d: d["ms"]["median"]
                 - d["breakdown"]["master_new_event_to_ret_event_ms"]["median"])


def e2e_part(name):
    """median (spread) of one part of the traced e2e run (benchrun e2e_ping -raw), ms."""
    return cell(series("e2e_trace.ours", lambda d: d["breakdown_ms"][name]["median"]))


row("e2e_test_ping_overhead_ms", "test.ping end to end: client time minus the master's new->ret span", "ms",
    series("e2e.ours", lambda d: d["overhead_ms"]["median"]), None, ("ours<=", 5.0, "<= 5 ms"),
    "LocalClient.cmd in the same run: overhead %s ms (its total minus the median span); where ours goes (a traced "
    "run beside it, ms): this client until the request is sent %s (TCP connect %s, ZMTP handshake %s), the master "
    "from the request to its new stamp %s (of which its <jid> event's fire, just before new: %s; LocalClient.cmd "
    "from its send: %s), the master's return stamp to the bytes on a bare bus connection %s, those bytes to our "
    "consumer %s" % (cell(py_over), e2e_part("call_to_sent"), e2e_part("call_to_sent.tcp_connect"),
                     e2e_part("call_to_sent.zmtp_handshake"), e2e_part("sent_to_master_new_stamp"),
                     e2e_part("master_jid_event_stamp_to_new_stamp"),
                     cell(series("e2e.anchor", lambda d: d["breakdown"]["client_send_to_master_new_event_ms"]["median"])),
                     e2e_part("raw_master_ret_stamp_to_bytes"), e2e_part("raw_ret_bytes_to_ret_seen")))
row("e2e_test_ping_vs_localclient_cmd", "test.ping end to end (publish -> return)", "ms",
    series("e2e.ours", lambda d: d["total_ms"]["median"]), py_total, None,
    "anchor: LocalClient.cmd; master span (ours) %s ms" % cell(series("e2e.ours", lambda d: d["master_span_ms"]["median"])))

# --- row e2e_configure_overhead_ms (benchrun configure; ours only) ---
def _cfg(*path):
    return cell(series("configure.ours", lambda d: dig(d, *path)["median"]))


row("e2e_configure_overhead_ms", "dispatched configure, Start -> terminal: the rest beyond the minion's apply, "
    "the capability check and the receipt proof", "ms",
    series("configure.ours", lambda d: d["rest_ms"]["median"]), None, ("ours<=", 20.0, "<= 20 ms"),
    "total %s = apply %s (run job new->ret span) + capability check %s + receipt proof %s + rest; "
    "rest = durable claim writes %s (create %s, dispatch intent %s, terminal commit %s) + the remainder %s "
    "(the master's part of it: publish -> its new event %s, the return's _stamp -> the worker's proof call %s); "
    "the 4 durable record writes vs the fsync floor "
    "(one such write) in the same rounds: %s ms"
    % (_cfg("total_ms"), _cfg("apply_ms"), _cfg("capability_ms"), _cfg("proof_ms"),
       _cfg("claim_writes_ms", "sum"), _cfg("claim_writes_ms", "create"), _cfg("claim_writes_ms", "intent"),
       _cfg("claim_writes_ms", "terminal"), _cfg("rest_beyond_writes_ms"),
       _cfg("rest_parts_ms", "publish_to_new"), _cfg("rest_parts_ms", "ret_to_proof"),
       cell(series("cfgfsync.anchor", lambda d: d["us"]["median"] / 1000.0))))
# --- end of row e2e_configure_overhead_ms ---

# --- row rollout_fleet40_vs_salt_apply (benchrun rollout vs rollout_salt) ---
def _ro(prefix, k):
    return cell(series(prefix, lambda d: d[k]))


_ro_n = sorted({d.get("minions") for d in rounds("rollout.ours").values()} - {None})
row("rollout_fleet40_vs_salt_apply",
    "rollout: configure on every fleet minion (%s) at once through the dispatcher (first Start -> last terminal)"
    % ("/".join(map(str, _ro_n)) or "?"), "s",
    series("rollout.ours", lambda d: d["wall_s"]), series("rollout.anchor", lambda d: d["wall_s"]),
    ("ratio<=", 1.5, "<= 1.5x"),
    "anchor: salt -L <the fleet> state.apply roles.client_stack (Salt's CLI, start-up included); CPU s, ours / salt: "
    "client %s / %s, master %s / %s, minions %s / %s; ours per round: %s capability publications, %s proofs"
    % (_ro("rollout.ours", "client_cpu_s"), _ro("rollout.anchor", "client_cpu_s"),
       _ro("rollout.ours", "master_cpu_s"), _ro("rollout.anchor", "master_cpu_s"),
       _ro("rollout.ours", "minions_cpu_s"), _ro("rollout.anchor", "minions_cpu_s"),
       _ro("rollout.ours", "capability_publishes"), _ro("rollout.ours", "proofs")))
row("rollout_fleet40_reuse_vs_salt_apply",
    "rollout after a readiness Ping of the fleet, Timers.CapabilityReuse 60 s (no capability job per request)", "s",
    series("rollout_reuse.ours", lambda d: d["wall_s"]), series("rollout.anchor", lambda d: d["wall_s"]),
    ("ratio<=", 1.5, "<= 1.5x"),
    "same anchor; CPU s: client %s, master %s, minions %s; capability publications per round %s"
    % (_ro("rollout_reuse.ours", "client_cpu_s"), _ro("rollout_reuse.ours", "master_cpu_s"),
       _ro("rollout_reuse.ours", "minions_cpu_s"), _ro("rollout_reuse.ours", "capability_publishes")))


def _ro_parts(prefix):
    names = ("start_to_capability", "capability", "capability_to_publish", "publish_to_proven", "proof",
             "returned_to_committed")
    return ", ".join("%s %s" % (n, fmt(med(series(prefix, lambda d, n=n: d["per_request_ms"][n]["median"]))))
                     for n in names if series(prefix, lambda d, n=n: d["per_request_ms"][n]["median"]))


for _p, _k in (("rollout.ours", "rollout_fleet40_vs_salt_apply"), ("rollout_reuse.ours", "rollout_fleet40_reuse_vs_salt_apply")):
    _parts = _ro_parts(_p)
    if _parts:
        for _i, _r in enumerate(rows):
            if _r[0] == _k:
                rows[_i] = _r[:8] + (_r[8] + "; per request, ms (medians of the round medians): " + _parts,)
# --- end of row rollout ---

# event bus
rw, rc = reader_series()
row("event_reader_vs_salt_reader", "event bus reader, live master, replayed test.ping returns", "events/s",
    rw, series("events.anchor", lambda d: d["salt"]["per_s"]["median"]), ("ratio>=", 6.0, ">= 6x"),
    "anchor: Salt's MasterEvent.get_event on the same backlog; ours per CPU second: %s" % cell(rc))
row("event_reader_vs_master_delivery", "event bus reader, live master: ours vs what the master's publisher delivers", "events/s",
    rw, series("events.anchor", lambda d: d["recv"]["recv_only_per_s"]["median"]), None,
    "anchor: the kit's recv reader (receives the backlog without decoding it: the ceiling of any reader); "
    "our reader's CPU use while draining: %s of one CPU; %s bytes per socket read" % (cell(reader_util()), cell(reader_bytes_per_read())))
row("event_decode_vs_salt_unpack", "event stream decode from memory (captured test.ping return through a pipe, up to 128 frames per write: framing, queue, typed return), CPU time", "events/s",
    series("decode.ours", lambda d: d["cpu_per_s"]), series("events.anchor", lambda d: d["salt_unpack_only_per_s"]),
    None, "anchor: SaltEvent.unpack of the same event (wall, one thread); ours wall: %s/s"
    % cell(series("decode.ours", lambda d: d["wall_per_s"])))

# dispatcher
floor = series("fsync.anchor", lambda d: d["us"]["median"])
row("start_new_idle_vs_fsync_floor", "Start of a new request for a new client, idle dispatcher", "us",
    series("start.ours", lambda d: d["start_idle_us"]["median"]), floor, ("ratio<=", 2.0, "<= 2x"),
    "anchor: fsync floor (create-excl, write, fsync, rename, dir fsync) on the same file system")
row("start_new_known_client_vs_fsync_floor", "Start of a new request for a known client, idle dispatcher", "us",
    series("start.ours", lambda d: d.get("start_known_client_us", {}).get("median")), floor, None,
    "the client's index directory exists (the common case in a fleet); the row above creates a client each time")
row("start_concurrent_100_vs_fsync_floor", "100 concurrent Starts: batch wall time / 100", "us",
    series("start.ours", lambda d: d["concurrent_per_start_us"]), floor, None,
    "per-Start latency in the batch: median %s us" % cell(series("start.ours", lambda d: d["concurrent_latency_us"]["median"])))
row("custom_64k_ms", "custom state: validate + compile + digest, 64 KiB / 100 ids, CPU time", "ms",
    series("custom.ours", lambda d: d["cpu_ms_per_op"]), None, ("ours<=", 5.0, "<= 5 ms CPU"),
    "wall: %s ms" % cell(series("custom.ours", lambda d: d["wall_ms_per_op"])))

inf = rounds("inflight.ours")
n_in = sorted({d.get("n") for d in inf.values()})
nlabel = "/".join(f"{n:,}" for n in n_in) if n_in else "10,000"
row("inflight_10k_dispatcher_rss_mb", f"{nlabel} in flight: dispatcher peak RSS (VmHWM, no GOMEMLIMIT)", "MiB",
    series("inflight.ours", lambda d: d["rss_mb"]), None, ("ours<=", 128.0, "<= 128 MiB"),
    "open descriptors at peak: %s" % cell(series("inflight.ours", lambda d: d["open_fds"])))
row("inflight_10k_status_p99_ms", f"{nlabel} in flight: Status p99 (8 callers)", "ms",
    series("inflight.ours", lambda d: d["status_ms"]["p99"]), None, ("ours<=", 1.0, "<= 1 ms"),
    "median %s ms; collections during the Status calls: %s (stop-the-world pauses %s ms in all); the same "
    "calls again once the dispatcher has settled (3 s later): p99 %s ms" % (
        cell(series("inflight.ours", lambda d: d["status_ms"]["median"])),
        cell(series("inflight.ours", lambda d: d.get("status_phase_gc", {}).get("collections"))),
        cell(series("inflight.ours", lambda d: d.get("status_phase_gc", {}).get("pause_total_ms"))),
        cell(series("inflight.ours", lambda d: d["status_settled_ms"]["p99"]))))
row("inflight_10k_last_start_to_last_publication_ms", f"{nlabel} in flight: last Start -> last publication", "ms",
    series("inflight.ours", lambda d: d["last_start_to_last_publication_ms"]),
    series("inflight.ours", lambda d: d["sim_time_for_n_s"] * 1000.0), None,
    "anchor: n / the simulator's own publish rate (raw Client, 32 callers, same round)")
row("inflight_10k_publish_rate_vs_simulator", f"{nlabel} in flight: publications/s, first Start -> last publication",
    "publishes/s", series("inflight.ours", lambda d: d["dispatcher_publish_per_s"]),
    series("inflight.ours", lambda d: d["sim_publish_per_s"]), None,
    "oduflow_job.run publications; all publications (capability checks too): %s/s; Starts took %s s; "
    "Start p99 %s ms; capability publications %s (one per batch of checks); publish round trip median %s ms; "
    "CPU from the first Start to the last publication: dispatcher %s s, simulator %s s; CPU per request, "
    "ms: dispatcher %s, simulator %s; the anchor's CPU per raw publication, ms: simulator %s, raw client %s "
    "(%s cores shared by both processes)" % (
        cell(series("inflight.ours", lambda d: d["dispatcher_all_publish_per_s"])),
        cell(series("inflight.ours", lambda d: d["starts_s"])),
        cell(series("inflight.ours", lambda d: d["start_ms"]["p99"])),
        cell(series("inflight.ours", lambda d: d["publications_by_fun"]["oduflow_job.capabilities/ok"])),
        cell(series("inflight.ours", lambda d: d["publish_ms"]["median"])),
        cell(series("inflight.ours", lambda d: d["dispatcher_cpu_s"])),
        cell(series("inflight.ours", lambda d: d["sim_cpu_s"])),
        cell(series("inflight.ours", lambda d: d.get("dispatcher_cpu_per_request_ms"))),
        cell(series("inflight.ours", lambda d: d.get("sim_cpu_per_request_ms"))),
        cell(series("inflight.ours", lambda d: d.get("anchor_sim_cpu_per_publish_ms"))),
        cell(series("inflight.ours", lambda d: d.get("anchor_client_cpu_per_publish_ms"))),
        cell(series("inflight.ours", lambda d: d.get("cpus")))))

# ---- etcd row group (begin): etcdbench, one etcd member per round (fsync on) -----------------------
row("etcd_start_new_vs_txn", "Start of a new request on etcd (claim read + create transaction)", "us",
    series("etcd.latency", lambda d: d["start_us"]["median"]),
    series("etcd.latency", lambda d: d["txn_us"]["median"]), ("ratio<=", 3.0, "<= 3x"),
    "anchor: one etcd transaction of the claim-create shape (If CreateRevision == 0, two Puts), same "
    "server, samples interleaved in each round")
row("etcd_status_vs_read", "Status of a running request on etcd (claim and request lock in one read transaction)", "us",
    series("etcd.latency", lambda d: d["status_us"]["median"]),
    series("etcd.latency", lambda d: d["read_us"]["median"]), ("ratio<=", 2.0, "<= 2x"),
    "anchor: one linearizable etcd read of the same claim key, same server; Status p99 %s us; claim and "
    "lock in one read transaction plus the claim's decode, raw client: %s us"
    % (cell(series("etcd.latency", lambda d: d["status_us"]["p99"])),
       cell(series("etcd.latency", lambda d: d["claim_lock_one_read_us"]["median"]))))
einf = rounds("etcd.inflight")
en = sorted({d.get("n") for d in einf.values()})
elabel = "/".join(f"{n:,}" for n in en) if en else "5,000"
row("etcd_inflight_5k_heap_per_request_kb", f"{elabel} in flight on etcd: live heap per request (after GC)", "KiB",
    series("etcd.inflight", lambda d: d["heap_per_request_kb"]), None, ("ours<=", 16.0, "<= 16 KiB"),
    "peak RSS %s MiB (idle %s MiB); goroutine stacks %s KiB and %s goroutines per request; all published %s s "
    "after the first Start" % (cell(series("etcd.inflight", lambda d: d["rss_mb"])),
                               cell(series("etcd.inflight", lambda d: d["rss_idle_mb"])),
                               cell(series("etcd.inflight", lambda d: d["stack_per_request_kb"])),
                               cell(series("etcd.inflight", lambda d: d["goroutines_per_request"])),
                               cell(series("etcd.inflight", lambda d: d["first_start_to_last_publication_s"]))))
# ---- etcd row group (end) -------------------------------------------------------------------------

with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2, sort_keys=True)
    f.write("\n")

machine = {}
try:
    with open(os.path.join(raw, "machine.env")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            machine[k] = v
except OSError:
    pass
meta = rounds("meta").get(0) or {}
try:
    with open(os.path.join(raw, "meta.json")) as f:
        meta = json.loads(f.read().strip().splitlines()[-1])
except (OSError, ValueError, IndexError):
    pass

report = []


def emit(line=""):
    report.append(line)


emit("| row | measurement | unit | rounds | ours: median (min-max) | anchor: median (min-max) | ratio | goal | met | notes |")
emit("|---|---|---|---|---|---|---|---|---|---|")
for key, label, unit, ours, anchor, ratio, goal, met, note in rows:
    a = "—" if anchor is None else cell(anchor)
    r = "—" if ratio is None else f"{ratio:.2f}x"
    g = goal[2] if goal else "—"
    m = "—" if goal is None else ("n/a" if met is None else ("met" if met else "**not met**"))
    emit(f"| `{key}` | {label} | {unit} | {len(ours)} | {cell(ours)} | {a} | {r} | {g} | {m} | {note} |")
emit()
emit(f"Rounds: {machine.get('rounds', '?')} per row, interleaved (ours, anchor, ours, anchor, ...); "
      "a cell is the median of the per-round figures and (min-max) their spread.")
emit(f"Run: {machine.get('started_utc', '?')} to {machine.get('ended_utc', '?')}, "
      f"{machine.get('cpus', '?')} CPUs ({machine.get('cpu_model', '?')}), {machine.get('mem_total_mb', '?')} MiB, "
      f"kernel {machine.get('kernel', '?')}, {machine.get('go', '?')}"
      + (f", Salt {meta.get('salt')} (Python {meta.get('python')}, libzmq {meta.get('libzmq')})" if meta.get("salt") else "")
      + f"; load average {machine.get('loadavg_start', '?')} at start, {machine.get('loadavg_end', '?')} at end"
      + (f"; commit {machine['commit']}" if machine.get("commit") else "") + ".")
if machine.get("inflight_rounds_cut"):
    emit(f"\nIn-flight rows: {machine['inflight_rounds_cut']}.")
if any(d.get("call_timeout_s") not in (None, 30) for d in inf.values()):
    cts = sorted({d.get("call_timeout_s") for d in inf.values()})
    emit(f"\nIn-flight rows ran with the dispatcher's CallTimeout at {'/'.join(f'{c:g}' for c in cts)} s "
          "(default 30 s), so that the queued tail of capability checks is measured rather than refused.")
if machine.get("etcd_inflight_rounds_cut"):  # etcd row group
    emit(f"\netcd in-flight row: {machine['etcd_inflight_rounds_cut']}.")
if machine.get("rollout_skipped"):
    emit(f"\nRollout rows skipped: {machine['rollout_skipped']}.")
if machine.get("quick") == "1":
    emit("\nThis was a --quick run (short rounds): a smoke test, not numbers to publish.")
if not meta.get("salt"):
    emit("\nNo Salt lab in this run: the lab rows and their anchors are missing.")
if machine.get("inflight_capped"):
    emit(f"\nIn-flight rows held {nlabel} requests, not 10,000 ({machine['inflight_capped']}): every "
          "in-flight request holds two flock descriptors (request lock and client lease).")
elif n_in and n_in != [10000]:
    emit(f"\nIn-flight rows held {nlabel} requests, not 10,000.")

text = "\n".join(report) + "\n"
sys.stdout.write(text)
if into:
    with open(into) as f:
        doc = f.read()
    b, e = doc.find(BEGIN), doc.find(END)
    if b < 0 or e < b or doc.count(BEGIN) != 1 or doc.count(END) != 1:
        sys.exit(f"{into}: the lines {BEGIN} and {END} must stand once each, in that order")
    b += len(BEGIN)
    with open(into + ".tmp", "w") as f:
        f.write(doc[:b] + "\n" + text + doc[e:])
    os.replace(into + ".tmp", into)
