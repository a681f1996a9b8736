"""Anchor side of clientbench: Salt's own Python LocalClient, driven over stdin/stdout.

One JSON request a line on stdin ({"op": "cmd"|"cmd_iter"|"batch", "tgt": [ids], "fun", "arg",
"timeout", "gather", "batch"}), one JSON answer a line on stdout. Anything Salt prints goes to
stderr. Run with Debian's /usr/bin/python3 and PYTHONPATH=$SALTLAB_DIR/src:$SALTLAB_DIR/pylib.
"""
import json
import os
import sys
import time

answers = os.fdopen(os.dup(1), "w")
sys.stdout = sys.stderr  # keep Salt's own prints off the answer stream

import salt.client  # noqa: E402
import salt.config  # noqa: E402

LAB = os.environ.get("SALTLAB_DIR", "/srv/saltlab").rstrip("/")
opts = salt.config.client_config(os.path.join(LAB, "etc", "master"))
lc = salt.client.LocalClient(mopts=opts)
answers.write(json.dumps({"ready": True}) + "\n")
answers.flush()

for line in sys.stdin:
    req = json.loads(line)
    op, tgt, fun = req["op"], req["tgt"], req["fun"]
    arg = req.get("arg", [])
    kw = {"timeout": req.get("timeout", 5), "tgt_type": "list", "gather_job_timeout": req.get("gather", 10)}
    t0 = time.perf_counter()
    out = {}
    try:
        if op == "cmd":
            ret = lc.cmd(tgt, fun, arg, **kw)
            out = {"last_s": time.perf_counter() - t0, "returned": sorted(ret.keys())}
        elif op == "cmd_iter":
            first, got = None, set()
            for r in lc.cmd_iter(tgt, fun, arg, **kw):
                if first is None:
                    first = time.perf_counter() - t0
                got.update(r.keys())
            out = {"first_s": first, "last_s": time.perf_counter() - t0, "returned": sorted(got)}
        elif op == "batch":
            got = set()
            for r in lc.cmd_batch(tgt, fun, arg, batch=str(req["batch"]), **kw):
                got.update(k for k in r.keys() if isinstance(k, str))
            out = {"last_s": time.perf_counter() - t0, "returned": sorted(got)}
    except Exception as exc:  # pylint: disable=broad-except
        out = {"error": "%s: %s" % (type(exc).__name__, exc), "last_s": time.perf_counter() - t0}
    answers.write(json.dumps(out) + "\n")
    answers.flush()
