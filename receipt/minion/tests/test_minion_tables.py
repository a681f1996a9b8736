"""Profile tables (the minion config key oduflow_profiles) and the id policy: a host-named minion with
the operator's two-profile table; each refusal (unknown profile, a dispatcher's other table, an id
outside the policy, a table that does not read) runs nothing; the seeds' default is unchanged."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import support  # noqa: E402
from support import MinionCase, host, new_jid, new_request  # noqa: E402

# The digests profiles.DefaultTable and the fleet table of oduflow/fleet_test.go have in Go
# (profiles/table_test.go pins the first): both languages hash the same canonical document.
SEEDS_DIGEST = "b3daf18418bab82cf150a0dd1cbab4e950396ece33f30c38f1430ffefcbf4537"
FLEET_DIGEST = "6fdb3482797e80eee371c71efedc11600cf21dbb6f308cb0c7d73f2e50a1971d"
FLEET_TABLE = {
    "profiles": {
        "webserver": {"sls": ["roles.webserver", "roles.monitoring"]},
        "full": {"highstate": True},
    },
    "minion_ids": "salt",
}
HOST_ID = "web01.lab.example"

# capabilities() keys of a module without oduflow_profiles: exactly those before tables.
SEEDS_CAPABILITY_KEYS = sorted([
    "protocol", "module", "module_sha256", "profiles", "salt_version", "runtime_guard_checks",
    "runtime_guard", "runtime_guard_error", "runtime_guard_forms", "multiprocessing", "pillar_ready",
    "pillar_ready_key_configured", "proof", "fencing",
])


class SeedsDefault(MinionCase):
    def test_capabilities_unchanged_without_a_table(self):
        caps, code = host.call(self.mod, "capabilities")
        self.assertEqual(code, 0)
        self.assertEqual(sorted(caps), SEEDS_CAPABILITY_KEYS)
        self.assertEqual(caps["profiles"], ["configure", "production", "volume_resize", "credentials", "custom"])
        self.assertEqual(self.mod._digest(self.mod._SEEDS_TABLE), SEEDS_DIGEST)

    def test_profile_table_kwarg(self):
        # A dispatcher may name the seeds' digest; any other is refused before anything runs.
        ret, code = self.run_job(new_request(), "configure", kwargs={"profile_table": SEEDS_DIGEST})
        self.assertEqual(code, 0, ret)
        self.assertReceipt(ret, "succeeded", 3, 3)
        ret, code = self.run_job(new_request(), "configure", kwargs={"profile_table": FLEET_DIGEST})
        self.assertEqual(code, 1)
        self.assertIn("profile table differs", ret)
        self.assertEqual(len(self.marker_lines()), 1)

    def test_host_id_outside_the_seeds_policy(self):
        mod = self.load(minion_id=HOST_ID)
        ret, code = self.run_job(new_request(), "configure", mod=mod)
        self.assertEqual(code, 1)
        self.assertIn("outside the id policy", ret)
        self.assertEqual(self.marker_lines(), [])


class FleetTable(MinionCase):
    minion_id = HOST_ID
    config = {"opts": {"oduflow_profiles": FLEET_TABLE}}

    def cache_files(self):
        return sorted(n for n in os.listdir(self.mod.__opts__["cachedir"]) if n.endswith(".p"))

    def test_capabilities_report_the_table(self):
        caps, code = host.call(self.mod, "capabilities")
        self.assertEqual(code, 0)
        self.assertEqual(caps["profile_table_sha256"], FLEET_DIGEST)
        self.assertEqual(caps["minion_ids"], "salt")
        self.assertEqual(caps["profiles"], ["full", "webserver", "custom"])
        self.assertTrue(caps["runtime_guard"], caps)
        self.assertEqual(caps["fencing"]["ready"], True)

    def test_webserver_and_highstate(self):
        req, jid = new_request(), new_jid()
        ret, code = self.run_job(req, "webserver", jid=jid, kwargs={"profile_table": FLEET_DIGEST, "fence_token": 1})
        self.assertEqual(code, 0, ret)
        self.assertReceipt(ret, "succeeded", 4, 4, req, jid, "webserver")
        self.assertEqual(ret["minion_id"], HOST_ID)
        self.assertEqual(ret["state_digest"], "")
        # at most once: the same publication again answers the receipt and runs nothing
        again, code = self.run_job(req, "webserver", jid=jid, kwargs={"profile_table": FLEET_DIGEST, "fence_token": 1})
        self.assertEqual((again, code), (ret, 0))
        req2 = new_request()
        ret2, code = self.run_job(req2, "full", kwargs={"profile_table": FLEET_DIGEST, "fence_token": 2})
        self.assertEqual(code, 0, ret2)
        self.assertReceipt(ret2, "succeeded", 5, 5, req2, None, "full")
        lines = [line.split()[1:3] for line in self.marker_lines()]
        self.assertEqual(lines, [["state.apply", "roles.webserver,roles.monitoring"], ["state.apply", "highstate"]])
        # the state caches (sls.p, highstate.cache.p) never reached the cachedir
        self.assertEqual(self.cache_files(), [])
        # the receipt decodes (host-named id, table profile) and status answers it
        data, reason = self.mod._decode_receipt(self.mod._canonical_json(ret))
        self.assertIsNone(reason)
        self.assertEqual(self.status(req, jid, "webserver")[0], ret)

    def test_refusals_run_nothing(self):
        cases = (
            ("configure", {"profile_table": FLEET_DIGEST}, "unknown profile"),
            ("nosuch", {"profile_table": FLEET_DIGEST}, "unknown profile"),
            ("webserver", {}, "profile table differs"),
            ("webserver", {"profile_table": SEEDS_DIGEST}, "profile table differs"),
            ("webserver", {"profile_table": 7}, "profile table differs"),
        )
        for profile, kwargs, needle in cases:
            ret, code = self.run_job(new_request(), profile, kwargs=kwargs)
            self.assertEqual(code, 1, (profile, kwargs, ret))
            self.assertIn(needle, ret)
        ret, code = self.status(new_request(), new_jid(), "configure")
        self.assertEqual(code, 1)
        self.assertIn("unknown profile", ret)
        self.assertEqual(self.marker_lines(), [])
        self.assertEqual(os.listdir(self.receipts) if os.path.isdir(self.receipts) else [], [])


class TableRefusals(MinionCase):
    minion_id = HOST_ID

    def test_id_outside_the_table_policy(self):
        table = dict(FLEET_TABLE, minion_ids="seeds")
        mod = self.load(config={"opts": {"oduflow_profiles": table}})
        caps, _ = host.call(mod, "capabilities")
        self.assertEqual(caps["profile_table_sha256"], "")
        self.assertIn("id policy", caps["profile_table_error"])
        ret, code = self.run_job(new_request(), "webserver", kwargs={"profile_table": mod._digest(table)}, mod=mod)
        self.assertEqual(code, 1)
        self.assertIn("outside the id policy", ret)
        self.assertEqual(self.marker_lines(), [])

    def test_bad_tables(self):
        for table in (
            "webserver",
            {"profiles": {}},
            {"profiles": {"custom": {"highstate": True}}},
            {"profiles": {"Web": {"sls": ["a"]}}},
            {"profiles": {"web": {"sls": []}}},
            {"profiles": {"web": {"sls": ["roles..web"]}}},
            {"profiles": {"web": {"sls": ["roles/web"]}}},
            {"profiles": {"web": {"sls": ["roles.*"]}}},
            {"profiles": {"web": {"sls": ["a", "a"]}}},
            {"profiles": {"web": {"sls": [1.5]}}},
            {"profiles": {"web": {"sls": ["a"], "highstate": True}}},
            {"profiles": {"web": {"highstate": 1}}},
            {"profiles": {"web": {"sls": ["a"]}}, "minion_ids": "any"},
            {"profiles": {"web": {"sls": ["a"]}}, "extra": 1},
            {"profiles": {"p%d" % i: {"sls": ["a"]} for i in range(65)}},
        ):
            mod = self.load(config={"opts": {"oduflow_profiles": table}})
            caps, code = host.call(mod, "capabilities")
            self.assertEqual(code, 0)
            self.assertEqual(caps["profile_table_sha256"], "", table)
            self.assertTrue(caps["profile_table_error"])
            ret, code = self.run_job(new_request(), "web", kwargs={"profile_table": "0" * 64}, mod=mod)
            self.assertEqual(code, 1)
            self.assertIn("oduflow_profiles is invalid", ret)
        self.assertEqual(self.marker_lines(), [])

    def test_ids_of_the_policy(self):
        mod = self.load(config={"opts": {"oduflow_profiles": FLEET_TABLE}})
        for bad in ("web*", "web01,web02", "a/b", "a..b", "-web"):
            self.assertFalse(mod._own_id_ok(bad, mod._table()[0]), bad)
        self.assertTrue(mod._own_id_ok(support.MINION_ID, mod._table()[0]))


if __name__ == "__main__":
    unittest.main()
