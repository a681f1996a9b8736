"""Pinned-Salt integration: the module under a real Salt source tree (3006.0 or later), through
`salt-call --local` (real loader, real __pub_jid injection, real state.sls/state.high,
real salt.state.State), without any daemon or network.

Env-gated: set ODUFLOW_SALT_SRC to a Salt source tree from 3006.0 on (e.g. the lab's
/srv/saltlab/src); optional ODUFLOW_SALT_PYLIB (extra PYTHONPATH, e.g. /srv/saltlab/pylib)
and ODUFLOW_SALT_PYTHON (interpreter with Salt's dependencies, default /usr/bin/python3).
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import support  # noqa: E402

SRC = os.environ.get("ODUFLOW_SALT_SRC", "")
PYLIB = os.environ.get("ODUFLOW_SALT_PYLIB", "")
PYTHON = os.environ.get("ODUFLOW_SALT_PYTHON", "/usr/bin/python3")

ROLES = {
    "client_stack": "step_one:\n  test.succeed_without_changes\n"
                    "step_two:\n  test.succeed_without_changes:\n    - require:\n      - test: step_one\n",
    "client_production": "ok:\n  test.succeed_without_changes\nbad:\n  test.fail_without_changes\n",
    "client_credentials": "par:\n  test.succeed_without_changes:\n    - parallel: True\n",
}


@unittest.skipUnless(SRC and os.path.isfile(os.path.join(SRC, "scripts", "salt-call")),
                     "set ODUFLOW_SALT_SRC to a Salt source tree (3006.0 or later) to run the pinned-Salt tests")
class RealSalt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="oduflow-salt-")
        os.chmod(cls.root, 0o700)
        for d in ("etc", "srv/roles", "srv/_modules", "cache"):
            os.makedirs(os.path.join(cls.root, d))
        shutil.copy(support.MODULE_FILE, os.path.join(cls.root, "srv", "_modules", "oduflow_job.py"))
        for name, text in ROLES.items():
            with open(os.path.join(cls.root, "srv", "roles", name + ".sls"), "w") as handle:
                handle.write(text)
        cls.cache = os.path.join(cls.root, "cache")
        cls.receipts = os.path.join(cls.root, "state", "receipts")
        with open(os.path.join(cls.root, "etc", "minion"), "w") as handle:
            handle.write("\n".join([
                "id: " + support.MINION_ID, "file_client: local", "root_dir: " + cls.root,
                "cachedir: " + cls.cache, "pki_dir: " + cls.root + "/pki", "sock_dir: " + cls.root + "/sock",
                "log_file: " + cls.root + "/minion.log", "file_roots:", "  base:", "    - " + cls.root + "/srv",
                "multiprocessing: True", "oduflow_receipt_dir: " + cls.receipts,
                # The legacy mode: these calls send no fence token.
                "oduflow_allow_unfenced_runs: True", ""]))
        ret = cls.salt_call("saltutil.sync_modules")
        assert ret == ["modules.oduflow_job"], ret

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, True)

    @classmethod
    def salt_call(cls, *args, expect_ok=True):
        env = dict(os.environ, PYTHONPATH=":".join(p for p in (SRC, PYLIB) if p))
        proc = subprocess.run(
            [PYTHON, os.path.join(SRC, "scripts", "salt-call"), "-c", os.path.join(cls.root, "etc"),
             "--local", "--out=json", "--retcode-passthrough"] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cls.root, timeout=120)
        out = proc.stdout.decode()
        if not expect_ok:
            return proc.returncode, out + proc.stderr.decode()
        if proc.returncode != 0:
            raise AssertionError("salt-call {} failed ({}): {}{}".format(args, proc.returncode, out, proc.stderr.decode()[-2000:]))
        try:
            return json.loads(out)["local"]
        except ValueError:
            return out

    def cache_files(self):
        return sorted(n for n in os.listdir(self.cache) if n == "sls.p" or n.endswith(".cache.p"))

    def clear_cache_files(self):
        for n in self.cache_files():
            os.unlink(os.path.join(self.cache, n))

    def test_capabilities(self):
        ret = self.salt_call("oduflow_job.capabilities")
        self.assertEqual(ret["protocol"], 1)
        self.assertTrue(ret["runtime_guard"], ret["runtime_guard_error"])
        self.assertGreaterEqual(int(ret["salt_version"].split(".")[0]), 3006)
        mark = ret["fencing"].pop("mark")
        self.assertTrue(isinstance(mark, int) and mark >= 0, mark)
        self.assertEqual(ret["fencing"], {"version": 1, "ready": True, "token_required": False})

    def test_fixed_role_receipt_without_raw_caches(self):
        self.clear_cache_files()
        req = str(uuid.uuid4())
        ret = self.salt_call("oduflow_job.run", req, "configure")
        self.assertEqual((ret["status"], ret["passed"], ret["total"]), ("succeeded", 2, 2), ret)
        self.assertEqual(ret["request_id"], req)
        self.assertEqual(self.cache_files(), [])
        path = os.path.join(self.receipts, "req-{}.json".format(req))
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertEqual(self.salt_call("oduflow_job.status", req, ret["jid"], "configure"), ret)
        # control: the same role through a plain state.apply leaves both raw caches behind
        self.salt_call("state.apply", "roles.client_stack")
        self.assertEqual(self.cache_files(), ["highstate.cache.p", "sls.p"])
        self.clear_cache_files()

    def test_failed_role(self):
        ret = self.salt_call("oduflow_job.run", str(uuid.uuid4()), "production")
        self.assertEqual((ret["status"], ret["passed"], ret["total"]), ("failed", 1, 2), ret)

    def test_parallel_state_is_guarded(self):
        ret = self.salt_call("oduflow_job.run", str(uuid.uuid4()), "credentials")
        self.assertEqual((ret["status"], ret["passed"], ret["total"]), ("failed", 0, 1), ret)
        self.assertEqual([n for n in os.listdir(self.cache) if n.isdigit()], [], "a parallel result dir was written")

    def test_fencing(self):
        first = self.salt_call("oduflow_job.run", str(uuid.uuid4()), "configure", "fence_token=41")
        self.assertEqual(first["status"], "succeeded", first)
        stale = self.salt_call("oduflow_job.run", str(uuid.uuid4()), "configure", "fence_token=41")
        self.assertEqual((stale["status"], stale["passed"], stale["total"], stale.get("code")), ("failed", 0, 0, "fenced"))
        req, jid = str(uuid.uuid4()), "20261201000000000042"
        fenced = self.salt_call("oduflow_job.fence", req, '"' + jid + '"', "configure", "42")
        self.assertEqual((fenced["jid"], fenced.get("code")), (jid, "fenced"))
        self.assertEqual(self.salt_call("oduflow_job.status", req, '"' + jid + '"', "configure"), fenced)
        later = self.salt_call("oduflow_job.run", str(uuid.uuid4()), "configure", "fence_token=43")
        self.assertEqual(later["status"], "succeeded", later)
        self.assertEqual(self.cache_files(), [])

    def test_custom_and_refusals(self):
        mod = support._load("oduflow_job_digest", support.MODULE_FILE)
        high = {"custom_ok": {"test": ["succeed_without_changes", {"name": "custom ok"}]}}
        payload = json.dumps({"digest": mod._digest(high), "high": high})
        ret = self.salt_call("oduflow_job.run", str(uuid.uuid4()), "custom", "'" + payload + "'")
        self.assertEqual((ret["status"], ret["passed"], ret["total"]), ("succeeded", 1, 1), ret)
        self.assertEqual(ret["state_digest"], mod._digest(high))
        for args, needle in ((("configure", "test=True"), "caller execution options are refused"),
                             (("configure", "queue=True"), "caller execution options are refused"),
                             (("highstate",), "unknown profile"),
                             (("custom", "'" + payload.replace("custom ok", "tampered") + "'"), "digest mismatch")):
            code, out = self.salt_call("oduflow_job.run", str(uuid.uuid4()), *args, expect_ok=False)
            self.assertNotEqual(code, 0, args)
            self.assertIn(needle, out, args)


if __name__ == "__main__":
    unittest.main()
