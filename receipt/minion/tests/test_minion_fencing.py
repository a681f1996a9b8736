"""Fencing (capability "fencing", version 1): the per-client high-water mark of fence tokens,
run's refusal of a token not above it, and fence(). Real files, real forks, SIGKILL, flock, and
the side-effect marker (one line per real state execution)."""

import json
import os
import signal
import stat
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support import Child, MinionCase, host, new_jid, new_request, park  # noqa: E402

FENCED_KEYS = sorted(["protocol", "minion_id", "request_id", "jid", "profile", "state_digest", "status",
                      "passed", "total", "code"])


class FenceCase(MinionCase):
    def run_fenced(self, req, jid, token, profile="configure", state_data_json="", mod=None):
        return self.run_job(req, profile, state_data_json, jid=jid, kwargs={"fence_token": token}, mod=mod)

    def fence(self, req, jid, token, profile="configure", mod=None):
        return host.call(mod or self.mod, "fence", [req, jid, profile, token], {}, new_jid())

    def assertFenced(self, ret, req, jid, profile="configure", digest=""):
        self.assertIsInstance(ret, dict, ret)
        self.assertEqual(sorted(ret), FENCED_KEYS)
        self.assertEqual(ret, {"protocol": 1, "minion_id": self.minion_id, "request_id": req, "jid": jid,
                               "profile": profile, "state_digest": digest, "status": "failed", "passed": 0,
                               "total": 0, "code": "fenced"})
        data, reason = self.mod._decode_receipt(self.mod._canonical_json(ret))
        self.assertIsNone(reason)

    def mark(self):
        path = os.path.join(self.receipts, "fence.json")
        with open(path, "rb") as handle:
            data = handle.read()
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        rec = json.loads(data.decode())
        self.assertEqual(data, self.mod._canonical_json(rec))
        self.assertEqual(sorted(rec), ["minion_id", "protocol", "record", "token"])
        self.assertEqual((rec["record"], rec["protocol"], rec["minion_id"]), ("fence", 1, self.minion_id))
        return rec["token"]

    def executions(self):
        return len(self.marker_lines())


class Fencing(FenceCase):
    def test_fence_then_run_is_refused(self):
        req, jid = new_request(), new_jid()
        ret, code = self.fence(req, jid, 5)
        self.assertEqual(code, 0, ret)
        self.assertFenced(ret, req, jid)
        self.assertEqual(self.mark(), 5)
        # the fenced publication arrives late: its own token, a higher one, or none at all
        for kwargs in ({"fence_token": 5}, {"fence_token": 6}, {}):
            again, code = self.run_job(req, "configure", jid=jid, kwargs=kwargs)
            self.assertEqual((again, code), (ret, 0))
        self.assertEqual(self.status(req, jid, "configure")[0], ret)
        self.assertEqual(self.fence(req, jid, 3)[0], ret)  # idempotent; the mark never goes down
        self.assertEqual(self.mark(), 5)
        self.assertEqual(self.executions(), 0)

    def test_run_then_fence_answers_the_receipt(self):
        req, jid = new_request(), new_jid()
        ret, _ = self.run_fenced(req, jid, 3)
        self.assertReceipt(ret, "succeeded", 3, 3, req, jid)
        self.assertEqual(self.mark(), 3)
        for token in (3, 9):
            self.assertEqual(self.fence(req, jid, token), (ret, 0))
        self.assertEqual(self.mark(), 9)
        self.assertEqual(self.executions(), 1)
        # a dead worker's run: fence answers unknown and leaves the evidence as it is
        req2, jid2 = new_request(), new_jid()
        host.BEHAVIOR["raise"] = ["roles.client_stack"]
        ret2, _ = self.run_fenced(req2, jid2, 10)
        self.assertReceipt(ret2, "unknown", 0, 0, req2, jid2)
        before = {k: v for k, v in self.snapshot().items() if k != "fence.json"}
        self.assertEqual(self.fence(req2, jid2, 11), (ret2, 0))
        self.assertEqual({k: v for k, v in self.snapshot().items() if k != "fence.json"}, before)

    def test_stale_tokens_are_refused(self):
        req1, jid1 = new_request(), new_jid()
        self.assertReceipt(self.run_fenced(req1, jid1, 5)[0], "succeeded", 3, 3, req1, jid1)
        for token in (5, 4, 1):
            req, jid = new_request(), new_jid()
            ret, code = self.run_fenced(req, jid, token)
            self.assertEqual(code, 0)
            self.assertFenced(ret, req, jid)
            self.assertEqual(self.status(req, jid, "configure")[0], ret)
            self.assertEqual(self.run_fenced(req, jid, token)[0], ret)  # the same publication again
        req, jid = new_request(), new_jid()
        self.assertReceipt(self.run_fenced(req, jid, 6)[0], "succeeded", 3, 3, req, jid)
        self.assertEqual(self.mark(), 6)
        self.assertEqual(self.executions(), 2)

    def test_custom_fenced_receipts(self):
        high = {"motd": {"test": ["succeed_without_changes", {"name": "motd"}]}}
        digest = self.mod._digest(high)
        payload = json.dumps({"digest": digest, "high": high})
        self.run_fenced(new_request(), new_jid(), 8, "custom", payload)
        req, jid = new_request(), new_jid()
        self.assertFenced(self.run_fenced(req, jid, 8, "custom", payload)[0], req, jid, "custom", digest)
        req, jid = new_request(), new_jid()
        fenced = self.fence(req, jid, 8, "custom")[0]
        self.assertFenced(fenced, req, jid, "custom", "")
        # its publication arrives late, with its payload: the fenced receipt, nothing runs
        self.assertEqual(self.run_fenced(req, jid, 9, "custom", payload), (fenced, 0))
        self.assertEqual(self.status(req, jid, "custom")[0], fenced)
        self.assertEqual(self.executions(), 1)

    def test_tokens_are_positive_integers(self):
        for token in ("5", True, 0, -1, 2 ** 53, 1.0, None, [5]):
            ret, code = self.run_fenced(new_request(), new_jid(), token)
            if token is None:
                self.assertEqual(code, 0, ret)  # no token: the run before fencing
                continue
            self.assertEqual(code, 1, token)
            self.assertIn("invalid fence token", ret)
            ret, code = self.fence(new_request(), new_jid(), token)
            self.assertEqual(code, 1, token)
            self.assertIn("invalid fence token", ret)
        self.assertEqual(self.executions(), 1)
        self.assertNotIn("fence.json", os.listdir(self.receipts))
        self.assertReceipt(self.run_fenced(new_request(), new_jid(), 2 ** 53 - 1)[0], "succeeded", 3, 3)

    def test_fence_binding_conflicts(self):
        req, jid = new_request(), new_jid()
        self.run_fenced(req, jid, 1)
        for args, needle in (([new_request(), jid, "configure", 2], "binding conflict on request_id"),
                             ([req, jid, "production", 2], "binding conflict on profile"),
                             ([req, new_jid(), "configure", 2], "binding conflict on jid"),
                             (["nope", jid, "configure", 2], "invalid request id"),
                             ([req, "1", "configure", 2], "invalid jid"),
                             ([req, jid, "highstate", 2], "unknown profile")):
            ret, code = host.call(self.mod, "fence", args, {}, new_jid())
            self.assertEqual(code, 1, args)
            self.assertIn(needle, ret)

    def test_F2_the_legacy_mode_fences_a_run_without_token_once_a_mark_exists(self):
        # A minion that has a mark refuses a run without a token as fenced, exactly like a stale
        # token, even in the legacy mode. Before: after the mark reached 7, a run without a token ran.
        self.run_fenced(new_request(), new_jid(), 7)
        self.assertEqual(self.executions(), 1)
        req, jid = new_request(), new_jid()
        ret, code = self.run_job(req, "configure", jid=jid)
        self.assertEqual(code, 0, ret)
        self.assertFenced(ret, req, jid)
        self.assertEqual(self.executions(), 1)
        self.assertEqual(self.mark(), 7)
        self.assertFenced(self.status(req, jid, "configure")[0], req, jid)


    def test_capabilities(self):
        caps = host.call(self.mod, "capabilities")[0]
        self.assertEqual(caps["fencing"], {"version": 1, "ready": True, "token_required": False, "mark": 0})
        self.run_fenced(new_request(), new_jid(), 7)
        self.fence(new_request(), new_jid(), 5)  # below the mark: it stays 7
        caps = host.call(self.mod, "capabilities")[0]
        self.assertEqual(caps["fencing"], {"version": 1, "ready": True, "token_required": False, "mark": 7})
        host.BEHAVIOR["salt_version"] = "3005.1"
        caps = host.call(self.load(), "capabilities")[0]
        self.assertEqual(caps["fencing"], {"version": 1, "ready": False, "token_required": False, "mark": 7})

    def test_F6_capabilities_of_an_exhausted_counter(self):
        # A mark at 2^53-1 cannot advance: fencing is not ready and says why; any token is fenced.
        # Before: capabilities reported ready.
        self.run_fenced(new_request(), new_jid(), 2 ** 53 - 1)
        caps = host.call(self.mod, "capabilities")[0]["fencing"]
        self.assertEqual((caps["ready"], caps.get("error"), caps["mark"]), (False, "exhausted", 2 ** 53 - 1))
        req, jid = new_request(), new_jid()
        self.assertFenced(self.run_fenced(req, jid, 2 ** 53 - 1)[0], req, jid)
        self.assertEqual(self.executions(), 1)

    def test_capabilities_with_a_malformed_fence_record(self):
        self.run_fenced(new_request(), new_jid(), 3)
        with open(os.path.join(self.receipts, "fence.json"), "w") as handle:
            handle.write('{"record": "fence"}')
        caps = host.call(self.mod, "capabilities")[0]["fencing"]
        self.assertFalse(caps["ready"])
        self.assertEqual(caps["mark"], 0)
        self.assertEqual(caps["error"], "_StoreError")

    def test_attested_fenced_receipt(self):
        req, jid = new_request(), new_jid()
        self.fence(req, jid, 4)
        import test_minion_proofs as proofs

        try:
            proofs.generate_key(os.path.join(self.paths["pki"], "minion.pem"))
        except unittest.SkipTest:
            raise
        proof, code = host.call(self.mod, "attest", [req, jid, "configure", proofs.NONCE])
        self.assertEqual(code, 0, proof)
        self.assertFenced(proof["receipt"], req, jid)
        msg = b"oduflow-receipt-proof-v1\n" + proofs.NONCE.encode() + b"\n" + self.mod._canonical_json(proof["receipt"])
        self.assertIn(b'"code":"fenced"', msg)
        self.assertTrue(proofs.verify(os.path.join(self.paths["pki"], "minion.pem"), msg, proof["sig"]))


class HostileFenceRecord(FenceCase):
    def assertRefusedNothingRun(self, needle):
        req, jid = new_request(), new_jid()
        before = {k: v for k, v in self.snapshot().items() if k.endswith(".json")}
        ret, code = self.run_fenced(req, jid, 100)
        self.assertEqual(code, 1, ret)
        self.assertIn("receipt store unresolved: " + needle, ret)
        ret, code = self.fence(req, jid, 100)
        self.assertEqual(code, 1, ret)
        self.assertIn("receipt store unresolved: " + needle, ret)
        self.assertEqual({k: v for k, v in self.snapshot().items() if k.endswith(".json")}, before)
        self.assertEqual(self.executions(), 0)
        self.assertEqual(self.status(req, jid, "configure")[0]["status"], "not_started")

    def write_fence(self, data, mode=0o600):
        os.makedirs(self.receipts, mode=0o700, exist_ok=True)
        path = os.path.join(self.receipts, "fence.json")
        with open(path, "wb") as handle:
            handle.write(data if isinstance(data, bytes) else json.dumps(data).encode())
        os.chmod(path, mode)
        return path

    def test_malformed_records(self):
        good = {"record": "fence", "protocol": 1, "minion_id": self.minion_id, "token": 7}
        for data in (b"", b"{", b"[]", b"7", dict(good, token="7"), dict(good, token=True), dict(good, token=0),
                     dict(good, token=2 ** 53), dict(good, token=7.0), dict(good, record="jid_index"),
                     dict(good, protocol=2), dict(good, extra=1), {k: v for k, v in good.items() if k != "token"},
                     b'{"record":"fence","protocol":1,"minion_id":"%s","token":7,"token":1}' % self.minion_id.encode(),
                     b"\xff\xfe"):
            self.write_fence(data)
            self.assertRefusedNothingRun("malformed fence record (fence.json)")

    def test_record_of_another_minion(self):
        self.write_fence({"record": "fence", "protocol": 1, "minion_id": "client-00000000-0000-4000-8000-000000000000",
                          "token": 1})
        self.assertRefusedNothingRun("fence record of another minion (fence.json)")

    def test_unsafe_files(self):
        good = {"record": "fence", "protocol": 1, "minion_id": self.minion_id, "token": 1}
        path = self.write_fence(good, mode=0o640)
        self.assertRefusedNothingRun("group/other permissions (fence.json)")
        os.chmod(path, 0o600)
        os.rename(path, path + ".real")
        os.symlink(path + ".real", path)
        self.assertRefusedNothingRun("symlink (fence.json)")
        os.unlink(path)
        os.link(path + ".real", path)
        self.assertRefusedNothingRun("multiple links (fence.json)")
        os.unlink(path)
        os.unlink(path + ".real")
        os.mkfifo(path, 0o600)
        self.assertRefusedNothingRun("not a regular file (fence.json)")
        os.unlink(path)
        self.write_fence(b" " * (65 * 1024))
        self.assertRefusedNothingRun("record too large (fence.json)")

    def test_F2_run_without_token_fails_closed_on_an_untrusted_record(self):
        # The legacy mode (unfenced runs allowed) still reads the mark: a malformed, foreign or too
        # open fence record refuses a run without a token exactly as one with a token. Before: it ran.
        good = {"record": "fence", "protocol": 1, "minion_id": self.minion_id, "token": 1}
        for data, mode, needle in ((b"garbage", 0o600, "malformed fence record"),
                                   (dict(good, minion_id="client-00000000-0000-4000-8000-000000000000"), 0o600,
                                    "fence record of another minion"),
                                   (good, 0o640, "group/other permissions")):
            self.write_fence(data, mode)
            req, jid = new_request(), new_jid()
            ret, code = self.run_job(req, "configure", jid=jid)
            self.assertEqual(code, 1, ret)
            self.assertIn("receipt store unresolved: " + needle, ret)
            self.assertEqual(self.executions(), 0)
            self.assertEqual(self.status(req, jid, "configure")[0]["status"], "not_started")


class FenceProcesses(FenceCase):
    """Real forks: the mark survives a SIGKILLed worker, and fence() races run() safely."""

    def spawn(self, fn):
        def body(notify):
            return fn(self.load(), notify)

        return Child(body)

    def test_mark_durable_across_a_killed_worker(self):
        req, jid = new_request(), new_jid()

        def worker(mod, notify):
            host.BEHAVIOR["hook"] = lambda phase, info: park(notify, "in-state")
            return host.call(mod, "run", [req, "configure", {"__kwarg__": True, "fence_token": 9}], {}, jid)

        child = self.spawn(worker)
        child.wait_point("in-state")
        child.kill()
        child.join()
        self.assertEqual(child.killed_by(), signal.SIGKILL)
        self.assertEqual(self.mark(), 9)  # committed with the JID index before the state work
        self.assertReceipt(self.status(req, jid, "configure")[0], "unknown", 0, 0, req, jid)
        for token in (9, 8):
            other, ojid = new_request(), new_jid()
            self.assertFenced(self.run_fenced(other, ojid, token)[0], other, ojid)
        self.assertEqual(self.fence(req, jid, 9)[0]["status"], "unknown")  # started: never re-fenced
        other, ojid = new_request(), new_jid()
        self.assertReceipt(self.run_fenced(other, ojid, 10)[0], "succeeded", 3, 3, other, ojid)
        self.assertEqual(self.executions(), 2)

    def test_fence_while_the_run_is_live(self):
        req, jid = new_request(), new_jid()
        release = os.path.join(self.base, "release")

        def hook(phase, info):
            notify_box[0]("in-state")
            while not os.path.exists(release):
                time.sleep(0.01)

        notify_box = [None]

        def worker(mod, notify):
            notify_box[0] = notify
            host.BEHAVIOR["hook"] = hook
            return host.call(mod, "run", [req, "configure", {"__kwarg__": True, "fence_token": 2}], {}, jid)

        child = self.spawn(worker)
        child.wait_point("in-state")
        ret, code = self.fence(req, jid, 2)
        self.assertEqual(code, 0, ret)
        self.assertReceipt(ret, "running", 0, 0, req, jid)
        open(release, "w").close()
        done = child.join()
        self.assertReceipt(done[0], "succeeded", 3, 3, req, jid)
        self.assertEqual(self.fence(req, jid, 2), (done[0], 0))
        self.assertEqual(self.executions(), 1)

    def test_fence_racing_run(self):
        """fence and run of the same publication started together, many times: either the run
        executed (and fence answers its receipt) or it never will (both answer fenced)."""
        outcomes = []
        for i in range(12):
            req, jid = new_request(), new_jid()
            token = 100 + i
            start = os.path.join(self.base, "start-%d" % i)

            def gated(call):
                def body(mod, notify):
                    while not os.path.exists(start):
                        time.sleep(0.001)
                    return call(mod)
                return body

            runner = self.spawn(gated(lambda mod: host.call(
                mod, "run", [req, "configure", {"__kwarg__": True, "fence_token": token}], {}, jid)))
            fencer = self.spawn(gated(lambda mod: host.call(mod, "fence", [req, jid, "configure", token], {},
                                                            new_jid())))
            open(start, "w").close()
            ran, _ = runner.join()
            fenced, _ = fencer.join()
            final = self.status(req, jid, "configure")[0]
            if ran.get("code") == "fenced":
                self.assertFenced(ran, req, jid)
                self.assertEqual(fenced, ran)
                outcomes.append("fenced")
            else:
                self.assertReceipt(ran, "succeeded", 3, 3, req, jid)
                self.assertIn(fenced["status"], ("running", "succeeded"), fenced)
                outcomes.append("ran")
            self.assertEqual(final, ran)
        self.assertEqual(self.executions(), outcomes.count("ran"), outcomes)  # never a fenced run
        self.assertEqual(self.mark(), 111)


if __name__ == "__main__":
    unittest.main()


class FailClosed(FenceCase):
    """The default: the operator has not set oduflow_allow_unfenced_runs."""

    unfenced = False

    def test_F2_a_run_without_token_is_refused_by_default(self):
        # Before: _REQUIRE_FENCE_TOKEN defaulted to False and a run without a token executed.
        caps = host.call(self.mod, "capabilities")[0]["fencing"]
        self.assertTrue(caps["token_required"])
        req, jid = new_request(), new_jid()
        ret, code = self.run_job(req, "configure", jid=jid)
        self.assertEqual(code, 1, ret)
        self.assertIn("a fence token is required", ret)
        self.assertEqual(self.executions(), 0)
        self.assertFalse(os.path.exists(os.path.join(self.receipts, "req-" + req + ".json")))
        self.assertReceipt(self.run_fenced(new_request(), new_jid(), 1)[0], "succeeded", 3, 3)
        self.assertEqual(self.executions(), 1)
        ret, code = self.run_job(new_request(), "configure")
        self.assertEqual(code, 1, ret)
        self.assertEqual(self.executions(), 1)

    def test_only_exactly_true_opens_the_legacy_mode(self):
        for value in ("True", 1, "yes"):
            mod = self.load(config={"opts": {"oduflow_allow_unfenced_runs": value}})
            ret, code = self.run_job(new_request(), "configure", mod=mod)
            self.assertEqual(code, 1, (value, ret))
        self.assertEqual(self.executions(), 0)
