"""Shared helpers for the oduflow_job unit tests (standard library only)."""

import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest
import uuid

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree (module and host)

TESTS = os.path.dirname(os.path.abspath(__file__))
MINION = os.path.dirname(TESTS)
RECEIPT = os.path.dirname(MINION)
TESTDATA = os.path.join(RECEIPT, "testdata")
MODULE_FILE = os.path.join(MINION, "oduflow_job.py")

MINION_ID = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
OTHER_MINION_ID = "client-00000000-0000-4000-8000-000000000000"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


host = _load("oduflow_test_host", os.path.join(MINION, "host.py"))


def load_cases(name):
    """The shared case file receipt/testdata/<name>, or skip the test while it is absent."""
    path = os.path.join(TESTDATA, name)
    if not os.path.exists(path):
        raise unittest.SkipTest("shared case file {} does not exist yet".format(path))
    with open(path, "rb") as handle:
        return json.loads(handle.read().decode("utf-8"))


def new_jid(n=[0]):  # pylint: disable=dangerous-default-value
    n[0] += 1
    return time.strftime("%Y%m%d%H%M%S", time.gmtime()) + "{:06d}".format((os.getpid() * 1000 + n[0]) % 1000000)


def new_request():
    return str(uuid.uuid4())


class MinionCase(unittest.TestCase):
    """A fresh temporary minion (receipt dir, cachedir, marker) and the fake Salt."""

    minion_id = MINION_ID
    config = None

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="oduflow-minion-")
        os.chmod(self.base, 0o700)
        self.addCleanup(shutil.rmtree, self.base, True)
        host.install_fake_salt("3006.0")
        host.BEHAVIOR.update(results=host.default_results(), delay={}, hook=None)
        host.BEHAVIOR["raise"] = []
        host.BEHAVIOR["parallel"] = []
        self.paths = host.minion_paths(self.base, self.minion_id)
        self.mod = self.load()

    # The legacy mode (minion option oduflow_allow_unfenced_runs), on for the suites that call run
    # without a fence token as the dispatchers before fencing did; the fencing suite turns it off.
    unfenced = True

    def load(self, minion_id=None, config=None):
        config = dict(config or self.config or {})
        if self.unfenced:
            opts = dict(config.get("opts", {}))
            opts.setdefault("oduflow_allow_unfenced_runs", True)
            config["opts"] = opts
        return host.load_module(self.base, minion_id or self.minion_id, config)

    @property
    def receipts(self):
        return self.paths["receipts"]

    def run_job(self, request_id, profile, state_data_json="", jid=None, kwargs=None, mod=None):
        args = [request_id, profile] + ([state_data_json] if state_data_json else [])
        return host.call(mod or self.mod, "run", args, kwargs or {}, jid or new_jid())

    def status(self, request_id, jid, profile, mod=None):
        return host.call(mod or self.mod, "status", [request_id, jid, profile], {}, new_jid())

    def marker_lines(self):
        try:
            with open(self.paths["marker"]) as handle:
                return handle.read().splitlines()
        except FileNotFoundError:
            return []

    def snapshot(self):
        """Name -> (bytes, mode, uid, nlink) of every file in the receipt dir."""
        out = {}
        if not os.path.isdir(self.receipts):
            return out
        for name in sorted(os.listdir(self.receipts)):
            path = os.path.join(self.receipts, name)
            st = os.lstat(path)
            data = b""
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    data = handle.read()
            out[name] = (data, st.st_mode, st.st_uid, st.st_nlink)
        return out

    def assertReceipt(self, ret, status, passed, total, request_id=None, jid=None, profile=None):
        self.assertIsInstance(ret, dict, ret)
        self.assertEqual(sorted(ret), sorted(self.mod._RECEIPT_KEYS))
        self.assertEqual((ret["status"], ret["passed"], ret["total"]), (status, passed, total), ret)
        self.assertEqual(ret["protocol"], 1)
        self.assertEqual(ret["minion_id"], self.minion_id)
        if request_id:
            self.assertEqual(ret["request_id"], request_id)
        if jid:
            self.assertEqual(ret["jid"], jid)
        if profile:
            self.assertEqual(ret["profile"], profile)


class Child(object):
    """A forked worker running one module call. The parent can wait for a named point (the
    child writes the point's name to a pipe), signal it, and read its result."""

    def __init__(self, fn):
        self.rfd, wfd = os.pipe()
        self.res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            code = 0
            try:
                os.close(self.rfd)
                os.close(self.res_r)
                result = fn(lambda point: os.write(wfd, (point + "\n").encode()))
                os.write(res_w, json.dumps(result).encode())
            except BaseException:  # pylint: disable=broad-except
                import traceback

                traceback.print_exc()
                code = 70
            finally:
                os._exit(code)
        os.close(wfd)
        os.close(res_w)
        self.pid = pid
        self.buf = b""
        self.status = None

    def wait_point(self, point, timeout=20):
        deadline = time.monotonic() + timeout
        import select

        while (point + "\n").encode() not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("child never reached " + point)
            ready, _, _ = select.select([self.rfd], [], [], left)
            if ready:
                chunk = os.read(self.rfd, 4096)
                if not chunk:
                    raise AssertionError("child exited before " + point)
                self.buf += chunk

    def kill(self, sig=signal.SIGKILL):
        os.kill(self.pid, sig)

    def join(self, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                break
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                raise AssertionError("child did not finish")
            time.sleep(0.01)
        chunks = []
        while True:
            chunk = os.read(self.res_r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(self.res_r)
        os.close(self.rfd)
        data = b"".join(chunks)
        return json.loads(data.decode()) if data else None

    def killed_by(self):
        return os.WTERMSIG(self.status) if self.status is not None and os.WIFSIGNALED(self.status) else None


def park(notify, point):
    """In a child: report `point` and sleep until killed."""
    notify(point)
    while True:
        time.sleep(60)


_ = sys  # keep the import for callers that patch sys.path
