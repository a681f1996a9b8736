#!/usr/bin/env python3
"""Turn one bench.sh run (anchors.json + go-bench.txt) into a Markdown table of ratios.

Every ratio compares two numbers measured in the same run on the same machine. Standard
library only.
"""
import json
import os
import re
import statistics
import sys

out = sys.argv[1]


def load_json(name):
    p = os.path.join(out, name)
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return None


anchors = load_json("anchors.json") or {}
fsync = anchors.get("fsync_floor_us") or load_json("fsyncfloor.json") or {}

bench = {}   # name -> list of dicts of metric -> value
logs = []
with open(os.path.join(out, "go-bench.txt")) as f:
    for line in f:
        m = re.match(r"^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$", line.strip())
        if m:
            metrics = {}
            for v, unit in re.findall(r"([\d.]+) (\S+)", m.group(4)):
                metrics[unit] = float(v)
            bench.setdefault(m.group(1), []).append(metrics)
        elif "in flight:" in line or "memory:" in line:
            logs.append(line.strip())


def med(name, unit="ns/op"):
    vals = [m[unit] for m in bench.get(name, []) if unit in m]
    return statistics.median(vals) if vals else None


def fmt(v, unit):
    if v is None:
        return "n/a"
    return f"{v:,.3f} {unit}" if v < 100 else f"{v:,.0f} {unit}"


rows = []


def ratio(what, ours, ours_unit, anchor, anchor_unit, note, higher_is_better=False):
    r = None
    if ours is not None and anchor:
        r = ours / anchor
    rs = "n/a" if r is None else (f"{r:.2f}x" + (" (higher is better)" if higher_is_better else ""))
    rows.append(f"| {what} | {fmt(ours, ours_unit)} | {fmt(anchor, anchor_unit)} | {rs} | {note} |")


pub = anchors.get("py_publish_rtt_ms", {})
lab_ns = med("BenchmarkPublishRoundTripLab")
ratio("publish round trip, real master (fresh socket per publish)",
      lab_ns / 1e6 if lab_ns else None, "ms", pub.get("median"), "ms",
      "anchor: Salt LocalClient.run_job, root key, same lab")
ratio("publish round trip, real master vs Salt's persistent channel",
      lab_ns / 1e6 if lab_ns else None, "ms", (pub.get("channel") or {}).get("median"), "ms",
      "anchor: one persistent Salt ReqChannel")
sim_ns = med("BenchmarkPublishRoundTripSimulator")
ratio("publish round trip, simulator", sim_ns / 1e6 if sim_ns else None, "ms", pub.get("median"), "ms",
      "the simulator does no crypto: an upper bound of the client's own cost")

ev = anchors.get("py_event_decode_rate", {})
for load in ("test_ping_ret", "state_apply_ret"):
    d = ev.get(load) or {}
    go_rate = ((d.get("extra") or {}).get("per_s") or {}).get("median")
    ratio(f"event bus reader, live master, {load} backlog", go_rate, "events/s",
          ((d.get("salt") or {}).get("per_s") or {}).get("median"), "events/s",
          "anchor: Salt's MasterEvent reader on the same replayed load", True)
    ratio(f"event bus reader vs raw Python msgpack, {load}", go_rate, "events/s",
          ((d.get("raw") or {}).get("per_s") or {}).get("median"), "events/s",
          "anchor: plain socket + msgpack.Unpacker", True)
dec = med("BenchmarkDecodeReturnEvents")
if dec:
    unpack = (ev.get("test_ping_ret") or {}).get("salt_unpack_only_per_s")
    ratio("event decode from memory (captured returns)", 1e9 / dec, "events/s", unpack, "events/s",
          "anchor: Salt's own unpack of the same frames, in memory", True)

floor = fsync.get("median") or (fsync.get("us") or {}).get("median")
for name, label in (("BenchmarkClaimCreate", "claim create alone (index entry + claim: two durable writes)"),
                    ("BenchmarkStartNewIdle", "Start() of a new request, idle dispatcher (claim + worker launch)"),
                    ("BenchmarkDispatcher/Start/new-claim", "Start() of a new request with 5,000 in flight"),
                    ("BenchmarkDispatcher/Start/existing", "Start() of an existing request"),
                    ("BenchmarkDispatcher/Status/running", "Status() of a running request")):
    ns = med(name)
    ratio(label, ns / 1e3 if ns else None, "us", floor, "us", "anchor: fsync floor (create-excl, fsync, rename, dir fsync)")

cc = med("BenchmarkValidateCompileDigest64KiB")
ratio("custom state: validate + compile + digest, 64 KiB / 100 ids", cc / 1e6 if cc else None, "ms", 5.0, "ms",
      "anchor: the 5 ms target of the custom-states issue")
apply_s = (anchors.get("minion_apply_s") or {}).get("median")

print("| measurement | ours | anchor | ratio | what the anchor is |")
print("|---|---|---|---|---|")
for r in rows:
    print(r)
print()
if apply_s:
    print(f"For scale: the lab minion's own `state.apply roles.client_stack` takes {apply_s:.2f} s end to end.")
for line in logs:
    print("- " + re.sub(r"^.*?(in flight|memory)", r"\1", line))
meta = anchors.get("meta") or {}
if meta:
    print(f"\nRun: {meta.get('started_utc')}, Salt {meta.get('salt')}, {meta.get('cpus')} CPUs, "
          f"load average at start {meta.get('loadavg_at_start')}.")
else:
    print("\nNo Salt anchors in this run (the lab was not running).")
