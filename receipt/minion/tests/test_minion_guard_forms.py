"""The runtime guard knows each form a shimmed or called Salt internal has had from 3006.0 to the
3008 line, and every shim takes every form the guard accepts (no TypeError in place of a refusal)."""

import os
import sys
import unittest

import support
from support import MinionCase, host, new_jid, new_request


def fake_state_with(params):
    """The fake salt.state source with State.call_parallel taking params (after self)."""
    src = host.FAKE_STATE_SOURCE.replace(
        "    def call_parallel(self, cdata, low):\n",
        "    def call_parallel(self, {}):\n".format(", ".join(params)),
    )
    assert "    def call_parallel(self, {}):\n".format(", ".join(params)) in src
    return src


def install_state(source):
    host.install_fake_salt(host.BEHAVIOR["salt_version"])
    sys.modules["salt.state"] = host.fake_state_module(source, "<fake state {}>".format(abs(hash(source))))
    sys.modules["salt"].state = sys.modules["salt.state"]
    return sys.modules["salt.state"]


class GuardForms(MinionCase):
    def test_every_call_parallel_form_is_accepted_and_named(self):
        self.assertEqual([list(f[1]) for f in self.mod._CALL_PARALLEL_FORMS],
                         [["self", "cdata", "low"], ["self", "cdata", "low", "inject_globals"]])
        for label, names in self.mod._CALL_PARALLEL_FORMS:
            install_state(fake_state_with(names[1:]))
            caps = host.call(self.load(), "capabilities")[0]
            self.assertTrue(caps["runtime_guard"], (label, caps["runtime_guard_error"]))
            self.assertEqual(caps["runtime_guard_error"], "")
            self.assertEqual(caps["runtime_guard_forms"], {"salt.state.State.call_parallel": label})

    def test_release_lines_run(self):
        # the fake of each release line has that line's call_parallel (host.state_source_for)
        for version, form in (("3006.0", "3006.0-3006.9"), ("3006.9", "3006.0-3006.9"),
                              ("3006.10", "3006.10+"), ("3006.16", "3006.10+"), ("3007.1", "3006.0-3006.9"),
                              ("3007.8", "3006.10+"), ("3008.0", "3006.10+")):
            host.install_fake_salt(version)
            mod = self.load()
            caps = host.call(mod, "capabilities")[0]
            self.assertTrue(caps["runtime_guard"], (version, caps["runtime_guard_error"]))
            self.assertTrue(caps["runtime_guard_forms"]["salt.state.State.call_parallel"].startswith(form), version)
            ret, code = self.run_job(new_request(), "configure", mod=mod)
            self.assertEqual((code, ret["status"], ret["passed"], ret["total"]), (0, "succeeded", 3, 3), version)

    def test_parallel_refused_in_each_form_without_raw_results(self):
        for version in ("3006.0", "3006.16", "3007.8", "3008.0"):
            host.install_fake_salt(version)
            host.BEHAVIOR["parallel"] = ["roles.client_stack"]
            try:
                ret, _ = self.run_job(new_request(), "configure", mod=self.load())
            finally:
                host.BEHAVIOR["parallel"] = []
            self.assertEqual((ret["status"], ret["passed"], ret["total"]), ("failed", 0, 3), version)
            self.assertEqual(os.listdir(self.paths["cache"]), [], version)
            self.assertFalse(os.path.exists(self.paths["events"]), version)

    def test_unknown_forms_are_refused_by_name(self):
        for names in (["cdata"], ["cdata", "low", "inject_globals", "extra"], ["cdata", "low", "globals_"],
                      ["low", "cdata"]):
            install_state(fake_state_with(names))
            caps = host.call(self.load(), "capabilities")[0]
            self.assertFalse(caps["runtime_guard"], names)
            self.assertEqual(caps["runtime_guard_error"],
                             "call_parallel: unexpected signature of salt.state.State.call_parallel", names)
            ret, code = self.run_job(new_request(), "configure", jid=new_jid(), mod=self.load())
            self.assertEqual(code, 1, ret)
            self.assertIn("refusing to run unprotected", ret)
        self.assertEqual(self.marker_lines(), [])

    def test_no_shim_raises_type_error_for_an_accepted_form(self):
        """For every form the guard accepts, the shim answers a call in that form, positionally
        and by keyword, with the refusal (call_parallel) or silence (event)."""
        cases = (("call_parallel", self.mod._CALL_PARALLEL_FORMS, self.mod._ParallelRefused),
                 ("event", self.mod._STATE_EVENT_FORMS, None))
        for attr, forms, refusal in cases:
            for label, names in forms:
                state = install_state(fake_state_with(self.mod._CALL_PARALLEL_FORMS[-1][1][1:]))
                instance = state.State({"cachedir": self.paths["cache"]}, jid=new_jid())
                values = {name: {"probe": name} for name in names[1:]}
                calls = (
                    lambda m=getattr: m(instance, attr)(*values.values()),
                    lambda m=getattr: m(instance, attr)(**values),
                    lambda m=getattr: m(instance, attr)(*list(values.values())[:1], **dict(list(values.items())[1:])),
                )
                with self.mod._Shield(self.paths["cache"]):
                    for how, call in enumerate(calls):
                        if refusal is None:
                            self.assertIsNone(call(), (attr, label, how))
                            continue
                        with self.assertRaises(refusal, msg=(attr, label, how)):
                            call()
        self.assertEqual(os.listdir(self.paths["cache"]), [])

    def test_every_table_form_is_a_list_of_names(self):
        tables = [forms for _, _, _, forms in self.mod._STATE_FUNCTIONS] + [
            self.mod._STATE_EVENT_FORMS, self.mod._CALL_PARALLEL_FORMS, self.mod._LOAD_ARGS_FORMS,
            self.mod._GET_RSA_KEY_FORMS]
        for forms in tables:
            self.assertTrue(forms)
            labels = [label for label, _ in forms]
            self.assertEqual(len(labels), len(set(labels)), forms)
            for _, names in forms:
                self.assertTrue(all(isinstance(n, str) and n for n in names), forms)


_ = support
if __name__ == "__main__":
    unittest.main()
