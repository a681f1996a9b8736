"""Unit tests of oduflow_job: reduced schema, shared case files, identity and role
restrictions, option rejection, custom payloads, private storage, duplicate execution and
the loader/state integration (runtime guard and raw-result shims) with a fake Salt."""

import base64
import hashlib
import json
import os
import re
import stat
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import support  # noqa: E402
from support import MinionCase, host, load_cases, new_jid, new_request  # noqa: E402


def _plain():
    """The module loaded without Salt globals, for pure functions."""
    return support._load("oduflow_job_plain", support.MODULE_FILE)


class SharedCases(unittest.TestCase):
    """receipt/testdata/{reduce,receipt,digest}-cases.json, shared with the Go package."""

    @classmethod
    def setUpClass(cls):
        cls.mod = _plain()

    def test_reduce_cases(self):
        cases = load_cases("reduce-cases.json")
        self.assertTrue(cases)
        for case in cases:
            with self.subTest(case=case["name"]):
                status, passed, total = self.mod._reduce(case["return"])
                want = case["expect"]
                self.assertEqual(
                    {"status": status, "passed": passed, "total": total},
                    {"status": want["status"], "passed": want["passed"], "total": want["total"]},
                )

    def test_receipt_cases(self):
        cases = load_cases("receipt-cases.json")
        self.assertTrue(cases)
        for case in cases:
            with self.subTest(case=case["name"]):
                receipt, reason = self.mod._decode_receipt(case["json"].encode("utf-8", "surrogatepass"))
                if case["valid"]:
                    self.assertIsNone(reason)
                    canonical = self.mod._encode_receipt(receipt).decode("utf-8")
                    self.assertEqual(canonical, case["canonical"])
                else:
                    self.assertIsNone(receipt)
                    self.assertEqual(reason, case["reason"])

    def test_digest_cases(self):
        cases = load_cases("digest-cases.json")
        self.assertTrue(cases)
        for case in cases:
            with self.subTest(case=case["name"]):
                value = json.loads(case["input"])
                canonical = self.mod._canonical_json(value)
                self.assertEqual(canonical.decode("utf-8"), case["canonical"])
                self.assertEqual(hashlib.sha256(canonical).hexdigest(), case["sha256"])
                self.assertEqual(self.mod._digest(value), case["sha256"])


class PureFunctions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mod = _plain()

    def test_reduce_table(self):
        r = self.mod._reduce
        ok = {"result": True}
        self.assertEqual(r({"a": ok, "b": ok}), ("succeeded", 2, 2))
        self.assertEqual(r({"a": ok, "b": {"result": False}}), ("failed", 1, 2))
        self.assertEqual(r({"a": ok, "b": {"result": None}}), ("failed", 1, 2))
        self.assertEqual(r({"a": ok, "b": {"result": "False"}}), ("failed", 1, 2))
        self.assertEqual(r({"a": ok, "b": {"result": 1}}), ("failed", 1, 2))
        for bad in (None, [], ["error"], "x", 3, {}, {"a": ok, "b": {}}, {"a": "VALUE_TRIMMED"},
                    {"a": {"result": True, "comment": "VALUE_TRIMMED"}}, {1: ok}, {"a": [ok]}):
            self.assertEqual(r(bad), ("unknown", 0, 0), bad)

    def test_canonical_numbers(self):
        c = lambda v: self.mod._canonical_json(v).decode()  # noqa: E731
        self.assertEqual(c([1.0, -0.0, 1e21, 1e20, 1e-7, 1.5e-6, 0.1, 123.456, 2 ** 53]),
                         "[1,0,1e+21,100000000000000000000,1e-7,0.0000015,0.1,123.456,9007199254740992]")
        for bad in (2 ** 53 + 1, float("nan"), float("inf"), {1: 2}, b"x", "\ud800"):
            with self.assertRaises(self.mod._NotCanonical):
                self.mod._canonical_json(bad)

    def test_canonical_strings_and_order(self):
        v = {"\u20ac": 1, "\r": 2, "1": 3, "\U0001f600": 4, "\ufb33": 5, "a": "\u0007\"\\\n\u2028"}
        self.assertEqual(
            self.mod._canonical_json(v).decode(),
            '{"\\r":2,"1":3,"a":"\\u0007\\"\\\\\\n\u2028","\u20ac":1,"\U0001f600":4,"\ufb33":5}',
        )

    def test_identities(self):
        m = self.mod
        self.assertTrue(m._is_minion_id(support.MINION_ID))
        self.assertTrue(m._is_seed_minion_id(support.MINION_ID))
        for bad in ("client-5B2F8C1E-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
                    "client-5b2f8c1e3c4d4e5f8a9b0c1d2e3f4a5b", "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b\n", None,
                    "web01.lab.example"):
            self.assertFalse(m._is_seed_minion_id(bad), bad)
        # The id policy (minion_ids: salt), the same as receipt.ValidateMinionID.
        for good in ("web01", "web01.lab.example", "WEB_01-a.b", "9", "a" * 128, "web01.locked",
                     "client-5B2F8C1E-3c4d-4e5f-8a9b-0c1d2e3f4a5b"):
            self.assertTrue(m._is_minion_id(good), good)
        for bad in ("", "a" * 129, "web01.lock", "web01..example", ".web01", "-web01", "_web01", "web01/etc", "web*", "web?",
                    "web[0-9]", "web01,web02", "web 01", "web01\x00", "w\u00e9b01", "web01\n", None, 7):
            self.assertFalse(m._is_minion_id(bad), repr(bad))
        self.assertTrue(m._is_jid("20261129154606051411"))
        for bad in ("2026112915460605141", "202611291546060514111", "2026112915460605141a", 20261129154606051411,
                    "20261129154606051411\n", "２0261129154606051411"):
            self.assertFalse(m._is_jid(bad), bad)


class Capabilities(MinionCase):
    def test_protocol_and_guard(self):
        ret, code = host.call(self.mod, "capabilities")
        self.assertEqual(code, 0)
        self.assertEqual(ret["protocol"], 1)
        self.assertTrue(ret["runtime_guard"], ret)
        self.assertTrue(ret["pillar_ready"])
        self.assertEqual(ret["salt_version"], "3006.0")
        with open(support.MODULE_FILE, "rb") as handle:
            self.assertEqual(ret["module_sha256"], hashlib.sha256(handle.read()).hexdigest())

    def test_pillar_errors_and_ready_key(self):
        mod = self.load(config={"pillar": {"_errors": ["render failed"]}})
        self.assertFalse(host.call(mod, "capabilities")[0]["pillar_ready"])
        cfg = {"opts": {"oduflow_pillar_ready_key": "oduflow:ready"}}
        for pillar, want in (({}, False), ({"oduflow": {"ready": "true"}}, False),
                             ({"oduflow": {"ready": True}}, True)):
            mod = self.load(config=dict(cfg, pillar=pillar))
            ret = host.call(mod, "capabilities")[0]
            self.assertIs(ret["pillar_ready"], want, pillar)
            self.assertTrue(ret["pillar_ready_key_configured"])

    def test_guard_failures_reported(self):
        host.BEHAVIOR["salt_version"] = "2019.2.8"
        ret = host.call(self.load(), "capabilities")[0]
        self.assertFalse(ret["runtime_guard"])
        self.assertEqual(ret["runtime_guard_error"], "salt_version: Salt 2019.2.8 is older than 3006.0")
        self.assertEqual(ret["runtime_guard_checks"], ["salt_version", "multiprocessing", "state_functions",
                                                       "state_event", "call_parallel", "state_cache_writes",
                                                       "pub_jid", "crypto"])


# A fake salt.state whose event bus or process creation is reachable outside the shimmed
# methods (as a Salt release that fired events from a new method would be).
ROGUE_EVENT = host.FAKE_STATE_SOURCE + """

    def call_chunk(self, low, running, chunks):
        _bus.fire_event({"raw": running})
"""
ROGUE_SPAWN = host.FAKE_STATE_SOURCE + """

    def call_chunk(self, low, running, chunks):
        import multiprocessing
        multiprocessing.Process(target=print).start()
"""


class RuntimeGuard(MinionCase):
    """run refuses before writing anything when the shims cannot be trusted: the guard checks
    what Salt does, not which version it reports."""

    def assertRefusedUntouched(self, mod, needle):
        req, jid = new_request(), new_jid()
        ret, code = self.run_job(req, "configure", jid=jid, mod=mod)
        self.assertEqual(code, 1, ret)
        self.assertIn("refusing to run unprotected", ret)
        self.assertIn(needle, ret)
        caps = host.call(mod, "capabilities")[0]
        self.assertFalse(caps["runtime_guard"])
        self.assertIn(needle, caps["runtime_guard_error"])
        self.assertEqual(self.marker_lines(), [])
        self.assertEqual(self.snapshot(), {})

    def test_any_version_from_3006_runs_when_the_behaviour_holds(self):
        for version in ("3006.0", "3006.1", "3006.27", "3007.1", "3008.4", "3009.0"):
            host.BEHAVIOR["salt_version"] = version
            ret, code = self.run_job(new_request(), "configure", mod=self.load())
            self.assertEqual(ret["status"], "succeeded", (version, ret))

    def test_older_or_unknown_versions(self):
        for version in ("3005.1", "2019.2.8", "", "nightly"):
            host.BEHAVIOR["salt_version"] = version
            self.assertRefusedUntouched(self.load(), "salt_version: ")

    def test_multiprocessing_false(self):
        self.assertRefusedUntouched(self.load(config={"multiprocessing": False}), "multiprocessing must be True")

    def test_job_in_a_thread_or_a_shared_process(self):
        import threading

        mod = self.load()
        out = []
        thread = threading.Thread(target=lambda: out.append(self.run_job(new_request(), "configure", mod=mod)))
        thread.start()
        thread.join()
        self.assertEqual(out[0][1], 1, out)
        self.assertIn("multiprocessing: this job runs in a thread of a shared process", out[0][0])
        # a minion process that is not this job's own ProcessPayload(jid=...) process
        real_call = host.call

        def call_in(name):
            def call(module, fun, args=None, kwargs=None, jid=None):
                import multiprocessing

                proc = multiprocessing.current_process()
                orig = proc.name
                try:
                    setattr(type(proc), "name", property(lambda _self: name, lambda _self, _v: None))
                    return real_call(module, fun, args, kwargs, jid)
                finally:
                    del type(proc).name
                    proc.name = orig
            return call

        for name, needle in (("MainProcess", "does not run in its own Salt job process"),
                             ("ProcessPayload(jid={})".format("9" * 20), "belongs to another JID")):
            host.call = call_in(name)
            try:
                ret, code = self.run_job(new_request(), "configure", mod=mod)
            finally:
                host.call = real_call
            self.assertEqual(code, 1, ret)
            self.assertIn(needle, ret)
        self.assertEqual(self.marker_lines(), [])

    def test_grains_version_mismatch(self):
        mod = self.load()
        mod.__grains__["saltversion"] = "3007.0"
        self.assertRefusedUntouched(mod, "version mismatch")

    def test_signature_checks(self):
        salt = host.install_fake_salt("3006.0")

        def event(self, chunk_ret, length):  # a changed signature
            return None

        original = salt.state.State.__dict__["event"]
        salt.state.State.event = event
        try:
            self.assertRefusedUntouched(self.load(), "unexpected signature of salt.state.State.event")
        finally:
            salt.state.State.event = original
        del salt.state.State.call_parallel
        self.assertRefusedUntouched(self.load(), "missing Salt function salt.state.State.call_parallel")
        host.install_fake_salt("3006.0")
        sys.modules["salt.modules.state"].sls = lambda mods, **kwargs: None
        self.assertRefusedUntouched(self.load(), "unexpected signature of salt.modules.state.sls")
        host.install_fake_salt("3006.0")
        sys.modules["salt.minion"].load_args_and_kwargs = lambda func, args, data=None: (args, {})
        self.assertRefusedUntouched(self.load(), "unexpected signature of salt.minion.load_args_and_kwargs")

    def test_event_bus_reached_outside_state_event(self):
        host.install_fake_salt("3006.0")
        sys.modules["salt.state"] = host.fake_state_module(ROGUE_EVENT, "<rogue event>")
        sys.modules["salt"].state = sys.modules["salt.state"]
        self.assertRefusedUntouched(self.load(), "state_event: the event bus is reachable outside "
                                                 "salt.state.State.event (State.call_chunk)")

    def test_process_started_outside_call_parallel(self):
        host.install_fake_salt("3006.0")
        sys.modules["salt.state"] = host.fake_state_module(ROGUE_SPAWN, "<rogue spawn>")
        sys.modules["salt"].state = sys.modules["salt.state"]
        self.assertRefusedUntouched(self.load(), "call_parallel: process creation is reachable outside "
                                                 "salt.state.State.call_parallel (State.call_chunk)")

    def test_subclass_overriding_a_shimmed_method(self):
        salt = host.install_fake_salt("3006.0")
        salt.state.HighStateState = type("HighStateState", (salt.state.State,),
                                         {"event": lambda self, chunk_ret, length, fire_event=False: None})
        self.assertRefusedUntouched(self.load(), "HighStateState.event overrides the shimmed method")

    def test_state_function_outside_the_patched_module(self):
        import types

        mod = self.load()
        lone = types.FunctionType(host.fake_apply.__code__, {"salt": types.SimpleNamespace()}, "apply_")
        mod.__salt__["state.apply"] = lone
        self.assertRefusedUntouched(mod, "state.apply does not reach salt.utils.files through the patched module")

    def test_pub_jid_not_injected(self):
        host.install_fake_salt("3006.0")

        def load_args_and_kwargs(func, args, data=None, ignore_invalid=False):
            return host.split_args(args, {})  # the caller's __pub_jid would win

        sys.modules["salt.minion"].load_args_and_kwargs = load_args_and_kwargs
        self.assertRefusedUntouched(self.load(), "pub_jid: load_args_and_kwargs does not inject the publication JID")

    def test_crypto_backend(self):
        host.install_fake_salt("3006.0")
        sys.modules["salt.crypt"] = host.fake_crypt("none")
        self.assertRefusedUntouched(self.load(), "crypto: no known crypto backend in salt.crypt")
        crypt = host.install_fake_salt("3006.0").crypt
        if crypt.BACKEND == "none":
            self.skipTest("no crypto library installed")
        mod = self.load()
        real_sign = mod._sign
        mod._sign = lambda c, b, k, message: real_sign(c, b, k, message + b"x")  # signs something else
        self.assertRefusedUntouched(mod, "crypto: the {} backend's signature does not verify".format(
            mod._proof_backend(crypt)))

    def test_unverified_cache_write_path(self):
        host.install_fake_salt("3006.0")

        def sls(mods, test=None, exclude=None, queue=None, sync_mods=None, state_events=None, **kwargs):
            with open("sls.p", "wb") as handle:  # not through salt.utils.files.fopen
                handle.write(b"")

        sys.modules["salt.modules.state"].sls = sls
        self.assertRefusedUntouched(self.load(), "unverified way")

    def test_no_bypass_option(self):
        # the only minion options the module reads; none of them weakens the guard (pki_dir and
        # key_pass only locate and open the minion's own Salt key, for attest; __cli is the
        # program name Salt itself sets, "salt-call" for a one-job process)
        source = open(support.MODULE_FILE).read()
        read = set(re.findall(r"_opt\(\s*\"([^\"]+)\"", source))
        self.assertEqual(read, {"id", "multiprocessing", "cachedir", "oduflow_receipt_dir", "__cli",
                                "oduflow_pillar_ready_key", "pki_dir", "key_pass"})
        self.assertNotIn("__opts__[", source)
        self.assertEqual(source.count("__opts__"), 1)  # only through _opts()


class Restrictions(MinionCase):
    def test_minion_identity(self):
        for bad in ("minion-1", "client-5B2F8C1E-3C4D-4E5F-8A9B-0C1D2E3F4A5B", "client-nope"):
            mod = self.load(minion_id=bad)
            ret, code = self.run_job(new_request(), "configure", mod=mod)
            self.assertEqual(code, 1)
            self.assertIn("minion's id", ret)
            ret, code = host.call(mod, "status", [new_request(), new_jid(), "configure"])
            self.assertEqual(code, 1)
        self.assertEqual(self.marker_lines(), [])

    def test_request_jid_profile(self):
        for args, jid, needle in (
            (["not-a-uuid", "configure"], new_jid(), "request id"),
            ([new_request().upper(), "configure"], new_jid(), "request id"),
            ([new_request(), "highstate"], new_jid(), "unknown profile"),
            ([new_request(), "roles.client_stack"], new_jid(), "unknown profile"),
            ([new_request(), "configure"], "123", "__pub_jid"),
            ([new_request(), "configure"], None, "__pub_jid"),
        ):
            ret, code = host.call(self.mod, "run", args, {}, jid)
            self.assertEqual(code, 1, args)
            self.assertIn(needle, ret)
        self.assertEqual(self.marker_lines(), [])
        self.assertFalse(os.path.exists(self.receipts))

    def test_caller_options_rejected(self):
        for kwargs in ({"test": True}, {"queue": True}, {"pillar": {"x": 1}}, {"saltenv": "dev"},
                       {"concurrent": True}, {"state_events": True}, {"mods": "x"}, {"cache": True},
                       {"pub_jid": "1"}):
            ret, code = self.run_job(new_request(), "configure", kwargs=kwargs)
            self.assertEqual(code, 1, kwargs)
            self.assertIn("caller execution options are refused", ret)
        # as Salt parses them from the CLI: key=value strings and __kwarg__ dicts
        for extra in ("test=True", {"__kwarg__": True, "queue": True}):
            ret, code = host.call(self.mod, "run", [new_request(), "configure", extra], {}, new_jid())
            self.assertEqual(code, 1, extra)
            self.assertIn("refused", ret)
        self.assertEqual(self.marker_lines(), [])

    def test_caller_pub_jid_is_replaced(self):
        jid = new_jid()
        req = new_request()
        ret, code = host.call(self.mod, "run", [req, "configure", {"__kwarg__": True, "__pub_jid": "1" * 20}], {}, jid)
        self.assertReceipt(ret, "succeeded", 3, 3, req, jid)

    def test_fixed_roles_and_kwargs(self):
        seen = []
        host.BEHAVIOR["hook"] = lambda phase, info: seen.append(info)
        for profile, role, want in (("configure", "roles.client_stack", ("succeeded", 3, 3)),
                                    ("production", "roles.client_production", ("failed", 2, 3)),
                                    ("volume_resize", "roles.client_storage_resize", ("succeeded", 2, 2)),
                                    ("credentials", "roles.client_credentials", ("succeeded", 2, 2))):
            req, jid = new_request(), new_jid()
            ret, code = self.run_job(req, profile, jid=jid)
            self.assertEqual(code, 0)
            self.assertReceipt(ret, want[0], want[1], want[2], req, jid, profile)
            self.assertEqual(ret["state_digest"], "")
            self.assertEqual(seen[-1]["mods"], role)
            self.assertIs(seen[-1]["test"], False)
            self.assertIs(seen[-1]["queue"], False)
            self.assertIs(seen[-1]["state_events"], False)
            self.assertEqual(seen[-1]["kwargs"], {"concurrent": False})

    def test_fixed_profile_refuses_state_data(self):
        ret, code = self.run_job(new_request(), "configure", state_data_json='{"digest":"","high":{}}')
        self.assertEqual(code, 1)
        self.assertIn("must be empty", ret)

    def test_unstructured_returns_are_unknown(self):
        host.BEHAVIOR["results"]["roles.client_stack"] = ["Rendering SLS failed"]
        host.BEHAVIOR["results"]["roles.client_production"] = {}
        for profile in ("configure", "production"):
            req, jid = new_request(), new_jid()
            ret, _ = self.run_job(req, profile, jid=jid)
            self.assertReceipt(ret, "unknown", 0, 0, req, jid)
            self.assertEqual(self.status(req, jid, profile)[0]["status"], "unknown")
        host.BEHAVIOR["raise"] = ["roles.client_credentials"]
        req, jid = new_request(), new_jid()
        ret, _ = self.run_job(req, "credentials", jid=jid)
        self.assertReceipt(ret, "unknown", 0, 0, req, jid)
        # an unknown outcome is never replayed
        ret, _ = self.run_job(req, "credentials", jid=jid)
        self.assertEqual(ret["status"], "unknown")
        self.assertEqual(len([l for l in self.marker_lines() if "client_credentials" in l]), 1)

    def test_no_raw_result_leaves(self):
        host.BEHAVIOR["results"]["roles.client_stack"] = {
            "cmd_|-secret_|-echo hunter2_|-run": {"result": True, "comment": "hunter2", "changes": {"stdout": "hunter2"}}}
        ret, _ = self.run_job(new_request(), "configure")
        self.assertNotIn("hunter2", json.dumps(ret))
        for name, (data, _, _, _) in self.snapshot().items():
            self.assertNotIn(b"hunter2", data, name)


class Custom(MinionCase):
    HIGH = {"custom_ok": {"test": ["succeed_without_changes", {"name": "custom ok"}]},
            "custom_two": {"test": ["succeed_without_changes", {"name": "\u00e9t\u00e9 \u20ac"}]}}

    def payload(self, high=None, digest=None):
        high = self.HIGH if high is None else high
        return json.dumps({"digest": digest or self.mod._digest(high), "high": high})

    def test_custom_runs_state_high(self):
        seen = []
        host.BEHAVIOR["hook"] = lambda phase, info: seen.append(info)
        req, jid = new_request(), new_jid()
        ret, code = self.run_job(req, "custom", self.payload(), jid=jid)
        self.assertEqual(code, 0)
        self.assertReceipt(ret, "succeeded", 2, 2, req, jid, "custom")
        self.assertEqual(ret["state_digest"], self.mod._digest(self.HIGH))
        self.assertEqual(seen[0]["data"], self.HIGH)
        self.assertIs(seen[0]["test"], False)
        self.assertEqual(seen[0]["kwargs"], {"concurrent": False, "state_events": False})
        self.assertEqual(self.status(req, jid, "custom")[0], ret)

    def test_failing_custom(self):
        high = {"bad": {"test": ["fail_without_changes"]}, "good": {"test": ["succeed_without_changes"]}}
        ret, _ = self.run_job(new_request(), "custom", self.payload(high))
        self.assertEqual((ret["status"], ret["passed"], ret["total"]), ("failed", 1, 2))

    def test_custom_refusals(self):
        digest = self.mod._digest(self.HIGH)
        parallel = {"p": {"test": ["succeed_without_changes", {"parallel": True}]}}
        deep_parallel = {"p": {"cmd": ["run", {"name": "x"}, {"env": [{"parallel": False}]}]}}
        cases = [
            ("", "requires state_data_json"),
            ("null", "JSON object"),
            ("{", "not valid JSON"),
            (json.dumps({"high": self.HIGH}), "exactly digest and high"),
            (json.dumps({"digest": digest, "high": self.HIGH, "x": 1}), "exactly digest and high"),
            ('{"digest":"%s","digest":"%s","high":%s}' % (digest, digest, json.dumps(self.HIGH)), "exactly digest"),
            (self.payload(digest="0" * 64), "digest mismatch"),
            (self.payload(digest=digest.upper()), "invalid state digest"),
            (json.dumps({"digest": digest, "high": dict(self.HIGH, extra={"test": ["nop"]})}), "digest mismatch"),
            (self.payload(high={}), "1 to 100"),
            (self.payload(high={"x": ["y"]}), "must be mappings"),
            (self.payload(high={"__extend__": {}}), "reserved"),
            (self.payload(high={"include": {}}), "reserved"),
            (self.payload(high={str(i): {"test": ["nop"]} for i in range(101)}), "1 to 100"),
            (self.payload(high=parallel), "parallel"),
            (self.payload(high=deep_parallel), "parallel"),
            ('{"digest":"%s","high":{"a":{"n":NaN}}}' % digest, "not valid JSON"),
            (self.payload(high={"a": {"n": [2 ** 60]}}, digest="0" * 64), "canonical"),
        ]
        for text, needle in cases:
            with self.subTest(needle=needle, text=text[:60]):
                ret, code = self.run_job(new_request(), "custom", text)
                self.assertEqual(code, 1)
                self.assertIn(needle, ret)
        self.assertEqual(self.marker_lines(), [])
        self.assertEqual(self.snapshot(), {})

    def test_custom_binding_conflicts(self):
        req, jid = new_request(), new_jid()
        ret, _ = self.run_job(req, "custom", self.payload(), jid=jid)
        self.assertEqual(ret["status"], "succeeded")
        other = {"other": {"test": ["succeed_without_changes"]}}
        ret, code = self.run_job(req, "custom", self.payload(other), jid=jid)
        self.assertEqual(code, 1)
        self.assertIn("binding conflict on state_digest", ret)
        self.assertEqual(len(self.marker_lines()), 1)


class Storage(MinionCase):
    def test_private_modes(self):
        req, jid = new_request(), new_jid()
        self.run_job(req, "configure", jid=jid)
        st = os.stat(self.receipts)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        self.assertEqual(st.st_uid, os.geteuid())
        names = set(os.listdir(self.receipts))
        self.assertEqual(names, {"exec.lock", "index.lock", "jid-%s.json" % jid, "req-%s.json" % req, "req-%s.lock" % req})
        for name in names:
            st = os.lstat(os.path.join(self.receipts, name))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, name)
            self.assertEqual(st.st_nlink, 1)

    def test_receipt_bytes_are_canonical(self):
        req, jid = new_request(), new_jid()
        ret, _ = self.run_job(req, "production", jid=jid)
        with open(os.path.join(self.receipts, "req-%s.json" % req), "rb") as handle:
            data = handle.read()
        self.assertEqual(data, self.mod._canonical_json(ret))
        self.assertEqual(self.mod._decode_receipt(data), (ret, None))
        with open(os.path.join(self.receipts, "jid-%s.json" % jid), "rb") as handle:
            index = json.loads(handle.read())
        self.assertEqual(index, {"record": "jid_index", "protocol": 1, "minion_id": self.minion_id,
                                 "request_id": req, "jid": jid, "profile": "production", "state_digest": ""})

    def test_receipt_dir_created_under_missing_parents(self):
        cfg = {"opts": {"oduflow_receipt_dir": os.path.join(self.base, "var", "lib", "oduflow", "job-receipts")}}
        mod = self.load(config=cfg)
        ret, _ = self.run_job(new_request(), "configure", mod=mod)
        self.assertEqual(ret["status"], "succeeded")
        for d in ("var", "var/lib", "var/lib/oduflow", "var/lib/oduflow/job-receipts"):
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.base, d)).st_mode), 0o700, d)

    def test_relative_receipt_dir_refused(self):
        mod = self.load(config={"opts": {"oduflow_receipt_dir": "receipts"}})
        ret, code = self.run_job(new_request(), "configure", mod=mod)
        self.assertEqual(code, 1)
        self.assertIn("absolute", ret)

    def test_status_without_evidence(self):
        req, jid = new_request(), new_jid()
        ret, code = self.status(req, jid, "configure")
        self.assertEqual(code, 0)
        self.assertReceipt(ret, "not_started", 0, 0, req, jid, "configure")
        self.assertFalse(os.path.exists(self.receipts), "status must not create the store")
        self.run_job(new_request(), "configure")
        self.assertEqual(self.status(req, jid, "configure")[0]["status"], "not_started")


class Duplicates(MinionCase):
    def test_same_publication_twice_executes_once(self):
        req, jid = new_request(), new_jid()
        first, _ = self.run_job(req, "production", jid=jid)
        again, code = self.run_job(req, "production", jid=jid, mod=self.load())  # e.g. after a restart
        self.assertEqual(code, 0)
        self.assertEqual(again, first)
        self.assertEqual(len(self.marker_lines()), 1)
        self.assertEqual(self.status(req, jid, "production")[0], first)

    def test_request_with_another_jid_is_a_conflict(self):
        req, jid = new_request(), new_jid()
        self.run_job(req, "configure", jid=jid)
        ret, code = self.run_job(req, "configure", jid=new_jid())
        self.assertEqual(code, 1)
        self.assertIn("binding conflict on jid", ret)
        ret, code = self.status(req, new_jid(), "configure")
        self.assertEqual(code, 1)
        self.assertIn("binding conflict on jid", ret)
        self.assertEqual(len(self.marker_lines()), 1)

    def test_jid_bound_to_another_request(self):
        jid = new_jid()
        self.run_job(new_request(), "configure", jid=jid)
        other = new_request()
        ret, code = self.run_job(other, "configure", jid=jid)
        self.assertEqual(code, 1)
        self.assertIn("binding conflict on request_id", ret)
        ret, code = self.status(other, jid, "configure")
        self.assertEqual(code, 1)
        self.assertEqual(len(self.marker_lines()), 1)

    def test_profile_conflict(self):
        req, jid = new_request(), new_jid()
        self.run_job(req, "configure", jid=jid)
        for fn in (lambda: self.run_job(req, "production", jid=jid), lambda: self.status(req, jid, "production")):
            ret, code = fn()
            self.assertEqual(code, 1)
            self.assertIn("binding conflict on profile", ret)

    def test_other_minion_cannot_read(self):
        req, jid = new_request(), new_jid()
        self.run_job(req, "configure", jid=jid)
        cfg = {"opts": {"oduflow_receipt_dir": self.receipts}}
        mod = self.load(minion_id=support.OTHER_MINION_ID, config=cfg)
        ret, code = self.status(req, jid, "configure", mod=mod)
        self.assertEqual(code, 1)
        self.assertIn("binding conflict on minion_id", ret)


class Shield(MinionCase):
    def test_state_caches_and_events_stay_in_memory(self):
        self.run_job(new_request(), "configure")
        self.assertEqual(len(self.marker_lines()), 1)
        self.assertEqual(os.listdir(self.paths["cache"]), [])
        self.assertFalse(os.path.exists(self.paths["events"]))

    def test_without_shield_the_fake_would_leak(self):
        # the fake state system really writes and fires when not shielded
        host.CURRENT["jid"] = new_jid()
        sys.modules["salt.modules.state"].apply_("roles.client_stack", test=False)
        self.assertEqual(sorted(os.listdir(self.paths["cache"])), ["highstate.cache.p", "sls.p"])
        self.assertTrue(os.path.exists(self.paths["events"]))

    def test_restored_after_run_and_after_exception(self):
        salt = sys.modules["salt"]
        before = (salt.utils.files.fopen, salt.state.State.__dict__["event"], salt.state.State.__dict__["call_parallel"])
        self.run_job(new_request(), "configure")
        host.BEHAVIOR["raise"] = ["roles.client_stack"]
        self.run_job(new_request(), "configure")
        after = (salt.utils.files.fopen, salt.state.State.__dict__["event"], salt.state.State.__dict__["call_parallel"])
        self.assertEqual(before, after)

    def test_cache_reads_refused_and_other_files_pass(self):
        shield = self.mod._Shield(self.paths["cache"])
        files = sys.modules["salt.utils.files"]
        other = os.path.join(self.paths["cache"], "other.txt")
        with shield:
            with self.assertRaises(PermissionError):
                files.fopen(os.path.join(self.paths["cache"], "sls.p"), "rb")
            with self.assertRaises(PermissionError):
                files.fopen(os.path.join(self.paths["cache"], "..", "cache", "highstate.cache.p"))
            with files.fopen(os.path.join(self.paths["cache"], "x.cache.p"), mode="wb") as fp_:
                fp_.write(b"raw")
            with files.fopen(other, "w") as fp_:
                fp_.write("kept")
        self.assertEqual(sorted(os.listdir(self.paths["cache"])), ["other.txt"])
        self.assertEqual((shield.intercepted, shield.refused_reads), (1, 2))

    def test_parallel_is_guarded(self):
        host.BEHAVIOR["parallel"] = ["roles.client_stack"]
        ret, _ = self.run_job(new_request(), "configure")
        self.assertEqual((ret["status"], ret["passed"], ret["total"]), ("failed", 0, 3))
        self.assertEqual(os.listdir(self.paths["cache"]), [])


class Bootstrap(unittest.TestCase):
    def test_assets_match_module(self):
        with open(support.MODULE_FILE, "rb") as handle:
            module = handle.read()
        sha = hashlib.sha256(module).hexdigest()
        boot = os.path.join(support.MINION, "bootstrap")
        with open(os.path.join(boot, "client_receipts.sls")) as handle:
            sls = handle.read()
        self.assertIn("- source: salt://_modules/oduflow_job.py\n", sls)
        self.assertIn("- source_hash: sha256={}\n".format(sha), sls)
        with open(os.path.join(boot, "cloud-init.yaml")) as handle:
            cloud = handle.read()
        self.assertIn("- path: /var/cache/salt/minion/extmods/modules/oduflow_job.py\n", cloud)
        b64 = "".join(line.strip() for line in cloud.split("content: |\n", 1)[1].splitlines()
                      if line.startswith("      "))
        self.assertEqual(base64.b64decode(b64), module)

    def test_python36_syntax(self):
        # no syntax newer than 3.6 in the module Salt loads
        source = open(support.MODULE_FILE).read()
        self.assertNotRegex(source, r":=|\bmatch\s+\w+:|removeprefix|removesuffix|from __future__ import annotations")
        self.assertIsNone(re.search(r"\bf\"[^\"]*=\}", source))


if __name__ == "__main__":
    unittest.main()
