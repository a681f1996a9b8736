"""Crash and hostility tests of oduflow_job on a real file system, with real process forks,
SIGKILL/SIGSTOP, flock and a side-effect marker (one line per real state execution)."""

import json
import os
import signal
import stat
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support import Child, MinionCase, host, new_jid, new_request, park  # noqa: E402


class Crashes(MinionCase):
    def spawn_run(self, req, jid, profile="configure", prepare=None):
        def body(notify):
            mod = self.load()
            if prepare:
                prepare(mod, notify)
            return host.call(mod, "run", [req, profile], {}, jid)

        return Child(body)

    def assertExecutions(self, n):
        self.assertEqual(len(self.marker_lines()), n, self.marker_lines())

    def test_killed_between_the_two_claim_writes(self):
        req, jid = new_request(), new_jid()

        def prepare(mod, notify):
            original = mod._Store.write_atomic

            def write_atomic(store, name, data):
                original(store, name, data)
                if name.startswith("jid-"):
                    park(notify, "index-written")

            mod._Store.write_atomic = write_atomic

        child = self.spawn_run(req, jid, prepare=prepare)
        child.wait_point("index-written")
        child.kill()
        child.join()
        self.assertEqual(child.killed_by(), signal.SIGKILL)
        self.assertEqual(sorted(n for n in os.listdir(self.receipts) if n.endswith(".json")), ["jid-%s.json" % jid])
        self.assertReceipt(self.status(req, jid, "configure")[0], "unknown", 0, 0, req, jid)
        # the same publication again (e.g. after a minion restart) must not execute
        before = self.snapshot()
        ret, code = self.run_job(req, "configure", jid=jid)
        self.assertEqual(code, 0)
        self.assertReceipt(ret, "unknown", 0, 0, req, jid)
        self.assertExecutions(0)
        self.assertEqual(self.snapshot(), before)

    def test_killed_during_state_work(self):
        req, jid = new_request(), new_jid()

        def prepare(mod, notify):
            host.BEHAVIOR["hook"] = lambda phase, info: park(notify, "in-state")

        child = self.spawn_run(req, jid, prepare=prepare)
        child.wait_point("in-state")
        self.assertReceipt(self.status(req, jid, "configure")[0], "running", 0, 0, req, jid)
        child.kill()
        child.join()
        self.assertReceipt(self.status(req, jid, "configure")[0], "unknown", 0, 0, req, jid)
        ret, _ = self.run_job(req, "configure", jid=jid)
        self.assertReceipt(ret, "unknown", 0, 0, req, jid)
        self.assertExecutions(1)
        # the dead worker's execution lock died with it: another request can run
        other = new_request()
        ret, _ = self.run_job(other, "configure")
        self.assertReceipt(ret, "succeeded", 3, 3, other)
        self.assertExecutions(2)

    def test_killed_after_terminal_commit(self):
        req, jid = new_request(), new_jid()

        def prepare(mod, notify):
            original = mod._commit_terminal

            def commit(*args):
                receipt = original(*args)
                park(notify, "committed")
                return receipt

            mod._commit_terminal = commit

        child = self.spawn_run(req, jid, profile="production", prepare=prepare)
        child.wait_point("committed")
        child.kill()
        child.join()
        want = {"protocol": 1, "minion_id": self.minion_id, "request_id": req, "jid": jid,
                "profile": "production", "state_digest": "", "status": "failed", "passed": 2, "total": 3}
        self.assertEqual(self.status(req, jid, "production")[0], want)
        ret, code = self.run_job(req, "production", jid=jid)
        self.assertEqual((ret, code), (want, 0))
        self.assertExecutions(1)

    def test_next_request_runs_once_the_receipt_is_readable(self):
        # A dispatcher may learn a request's terminal receipt from status() and start the next
        # request at once: by then the execution lock must be free (it is released before the
        # terminal commit, the request lock after it).
        req, jid = new_request(), new_jid()

        def prepare(mod, notify):
            original = mod._commit_terminal

            def commit(*args):
                receipt = original(*args)
                park(notify, "committed")
                return receipt

            mod._commit_terminal = commit

        child = self.spawn_run(req, jid, prepare=prepare)
        self.addCleanup(lambda: (child.kill(), child.join()) if child.status is None else None)
        child.wait_point("committed")
        self.assertReceipt(self.status(req, jid, "configure")[0], "succeeded", 3, 3, req, jid)
        other = new_request()
        self.assertReceipt(self.run_job(other, "configure")[0], "succeeded", 3, 3, other)
        self.assertExecutions(2)

    def test_stopped_live_worker_is_running(self):
        req, jid = new_request(), new_jid()

        def prepare(mod, notify):
            def hook(phase, info):
                notify("in-state")
                os.kill(os.getpid(), signal.SIGSTOP)

            host.BEHAVIOR["hook"] = hook

        child = self.spawn_run(req, jid, prepare=prepare)
        child.wait_point("in-state")
        for _ in range(3):
            self.assertReceipt(self.status(req, jid, "configure")[0], "running", 0, 0, req, jid)
        # a duplicate publication meanwhile neither runs nor disturbs the worker
        ret, _ = self.run_job(req, "configure", jid=jid)
        self.assertReceipt(ret, "running", 0, 0, req, jid)
        child.kill(signal.SIGCONT)
        result = child.join()
        self.assertReceipt(result[0], "succeeded", 3, 3, req, jid)
        self.assertEqual(self.status(req, jid, "configure")[0], result[0])
        self.assertExecutions(1)

    def test_lost_publication(self):
        req, jid = new_request(), new_jid()
        child = self.spawn_run(req, jid)
        child.join()  # the worker finished; its return is thrown away
        ret, code = self.status(req, jid, "configure")
        self.assertEqual(code, 0)
        self.assertReceipt(ret, "succeeded", 3, 3, req, jid, "configure")
        with open(os.path.join(self.receipts, "req-%s.json" % req), "rb") as handle:
            self.assertEqual(handle.read(), self.mod._canonical_json(ret))
        self.assertExecutions(1)

    def test_concurrent_polls_and_duplicate_workers(self):
        req, jid = new_request(), new_jid()
        host.BEHAVIOR["delay"] = {"roles.client_stack": 0.5}
        workers = [self.spawn_run(req, jid) for _ in range(6)]

        def poll(notify):
            seen = []
            mod = self.load()
            deadline = time.monotonic() + 2.5
            while time.monotonic() < deadline:
                ret, code = host.call(mod, "status", [req, jid, "configure"])
                seen.append(ret["status"] if code == 0 else "error:" + ret)
                time.sleep(0.01)
            return seen

        pollers = [Child(poll) for _ in range(4)]
        results = [w.join() for w in workers]
        polls = [p.join() for p in pollers]
        final = self.status(req, jid, "configure")[0]
        self.assertReceipt(final, "succeeded", 3, 3, req, jid)
        for ret, code in results:
            self.assertEqual(code, 0, ret)
            self.assertIn(ret["status"], ("running", "succeeded"))
            if ret["status"] == "succeeded":
                self.assertEqual(ret, final)
        for seen in polls:
            self.assertTrue(set(seen) <= {"not_started", "running", "succeeded"}, set(seen))
            self.assertEqual(seen[-1], "succeeded")
        self.assertExecutions(1)

    def test_busy_minion_refuses_second_request(self):
        first, second = new_request(), new_request()
        jid1, jid2 = new_jid(), new_jid()

        def prepare(mod, notify):
            def hook(phase, info):
                notify("in-state")
                time.sleep(1.0)

            host.BEHAVIOR["hook"] = hook

        child = self.spawn_run(first, jid1, prepare=prepare)
        child.wait_point("in-state")
        ret, code = self.run_job(second, "production", jid=jid2)
        self.assertEqual(code, 0)
        self.assertReceipt(ret, "failed", 0, 1, second, jid2, "production")
        self.assertEqual(self.status(second, jid2, "production")[0], ret)
        self.assertReceipt(child.join()[0], "succeeded", 3, 3, first, jid1)
        self.assertEqual([l.split()[2] for l in self.marker_lines()], ["roles.client_stack"])


class Races(MinionCase):
    """Polls racing a live worker's commits on the real file system: no false refusal and no
    false unknown."""

    def test_read_while_replaced(self):
        # ext4 and tmpfs can show a file being renamed over with st_nlink == 0 to a
        # concurrent opener; that is "just replaced", never an unsafe file.
        req, jid = new_request(), new_jid()
        receipt, _ = self.run_job(req, "configure", jid=jid)
        self.assertReceipt(receipt, "succeeded", 3, 3, req, jid)
        name = "req-%s.json" % req
        data = self.mod._canonical_json(receipt)
        stop = os.path.join(self.base, "stop-replacing")

        def replace(notify):
            mod = self.load()
            count = 0
            with mod._Store(self.receipts, create=False) as store:
                while not os.path.exists(stop):
                    store.write_atomic(name, data)
                    count += 1
                    if count == 1:
                        notify("replacing")
            return count

        writer = Child(replace)
        try:
            writer.wait_point("replacing")
            errors = []
            with self.mod._Store(self.receipts, create=False) as store:
                for _ in range(2000):
                    try:
                        got = store.read(name)
                    except self.mod._StoreError as exc:
                        errors.append(str(exc))
                        continue
                    if got != data:
                        errors.append("read %r" % got)
            for _ in range(500):  # and through status(), which also opens the index
                ret, code = self.status(req, jid, "configure")
                if (ret, code) != (receipt, 0):
                    errors.append(ret)
        finally:
            open(stop, "w").close()
            replaced = writer.join()
        self.assertEqual(errors, [])
        self.assertGreater(replaced, 0)
        # a second link is still refused
        os.link(os.path.join(self.receipts, name), os.path.join(self.base, "second-link"))
        ret, code = self.status(req, jid, "configure")
        self.assertEqual(code, 1)
        self.assertIn("multiple links", ret)

    def test_status_racing_a_committing_worker(self):
        # The worker commits its terminal receipt, then releases the request lock. A poll
        # that read the running record before the commit and probes the lock after the
        # release must not call the request unknown. The poller is slowed down between
        # its reads and its lock probe to make that interleaving frequent.
        import random

        poller = self.load()
        original = poller._Store.is_locked

        def slow_is_locked(store, name):
            time.sleep(random.random() * 0.004)
            return original(store, name)

        poller._Store.is_locked = slow_is_locked
        seen = {}
        for _ in range(200):
            req, jid = new_request(), new_jid()
            worker = Child(lambda notify, req=req, jid=jid: host.call(self.mod, "run", [req, "configure"], {}, jid))
            statuses = []
            while True:
                pid, wstatus = os.waitpid(worker.pid, os.WNOHANG)
                ret, code = host.call(poller, "status", [req, jid, "configure"], {}, new_jid())
                statuses.append(ret["status"] if code == 0 else "error: " + ret)
                if pid:  # this poll started after the worker had exited
                    break
            result = self._reaped_result(worker, wstatus)
            self.assertReceipt(result[0], "succeeded", 3, 3, req, jid)
            self.assertEqual(statuses[-1], "succeeded", statuses)
            bad = [st for st in statuses if st not in ("not_started", "running", "succeeded")]
            self.assertEqual(bad, [], "request %s ended succeeded; polls saw %s" % (req, statuses))
            for st in statuses:
                seen[st] = seen.get(st, 0) + 1
        self.assertEqual(len(self.marker_lines()), 200)
        self.assertIn("running", seen, seen)  # the polls did overlap live workers

    def _reaped_result(self, child, wstatus):
        """Child.join for a child already reaped by waitpid: its result."""
        self.assertTrue(os.WIFEXITED(wstatus) and os.WEXITSTATUS(wstatus) == 0, wstatus)
        chunks = []
        while True:
            chunk = os.read(child.res_r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(child.res_r)
        os.close(child.rfd)
        data = b"".join(chunks)
        return json.loads(data.decode()) if data else None


class Hostility(MinionCase):
    """Unsafe or malformed store contents are refused and never overwritten."""

    def setUp(self):
        super(Hostility, self).setUp()
        self.req, self.jid = new_request(), new_jid()
        ret, _ = self.run_job(self.req, "configure", jid=self.jid)
        self.receipt = ret
        self.req_file = os.path.join(self.receipts, "req-%s.json" % self.req)
        self.executions = len(self.marker_lines())

    def assertRefused(self, needle=None, profile="configure"):
        before = self.snapshot()
        for fn in (lambda: self.status(self.req, self.jid, profile),
                   lambda: self.run_job(self.req, profile, jid=self.jid)):
            ret, code = fn()
            self.assertEqual(code, 1, ret)
            self.assertIn("receipt store unresolved", ret)
            if needle:
                self.assertIn(needle, ret)
        self.assertEqual(self.snapshot(), before, "the store changed")
        self.assertEqual(len(self.marker_lines()), self.executions, "something executed")

    def test_symlinked_directory(self):
        real = self.receipts + ".real"
        os.rename(self.receipts, real)
        os.symlink(real, self.receipts)
        self.assertRefused("symlink")
        self.assertFalse(os.path.islink(real))

    def test_symlinked_parent_directory(self):
        parent = os.path.dirname(self.receipts)
        os.rename(parent, parent + ".real")
        os.symlink(parent + ".real", parent)
        ret, code = self.status(self.req, self.jid, "configure")
        self.assertEqual(code, 1)
        self.assertIn("symlink", ret)
        ret, code = self.run_job(new_request(), "configure")
        self.assertEqual(code, 1)
        self.assertEqual(len(self.marker_lines()), self.executions)

    def test_symlinked_file(self):
        outside = os.path.join(self.base, "outside.json")
        with open(outside, "wb") as handle:
            handle.write(self.mod._canonical_json(self.receipt))
        os.chmod(outside, 0o600)
        os.unlink(self.req_file)
        os.symlink(outside, self.req_file)
        self.assertRefused("symlink")
        with open(outside, "rb") as handle:
            self.assertEqual(handle.read(), self.mod._canonical_json(self.receipt))

    def test_symlinked_lock(self):
        lock = os.path.join(self.receipts, "req-%s.lock" % self.req)
        os.unlink(lock)
        os.symlink("/dev/null", lock)
        ret, code = self.run_job(self.req, "configure", jid=self.jid)
        self.assertEqual(code, 1)
        self.assertIn("symlink", ret)

    def test_hard_link(self):
        os.link(self.req_file, os.path.join(self.base, "second-link"))
        self.assertRefused("multiple links")

    def test_group_readable_file(self):
        os.chmod(self.req_file, 0o644)
        self.assertRefused("group/other permissions")

    def test_group_readable_directory(self):
        os.chmod(self.receipts, 0o750)
        self.assertRefused("group/other permissions")
        self.assertEqual(stat.S_IMODE(os.stat(self.receipts).st_mode), 0o750)

    @unittest.skipUnless(os.geteuid() == 0, "chown needs root")
    def test_foreign_owner_file(self):
        os.chown(self.req_file, 65534, 65534)
        self.assertRefused("foreign owner")
        self.assertEqual(os.stat(self.req_file).st_uid, 65534)

    @unittest.skipUnless(os.geteuid() == 0, "chown needs root")
    def test_foreign_owner_directory(self):
        os.chown(self.receipts, 65534, 65534)
        self.assertRefused("foreign owner")

    def test_truncated_json(self):
        with open(self.req_file, "rb") as handle:
            data = handle.read()
        with open(self.req_file, "wb") as handle:
            handle.write(data[: len(data) // 2])
        self.assertRefused("malformed")

    def test_tampered_receipt(self):
        for bad in (dict(self.receipt, status="running"), dict(self.receipt, extra=1),
                    dict(self.receipt, passed=4), dict(self.receipt, total="3")):
            with open(self.req_file, "w") as handle:
                json.dump(bad, handle)
            self.assertRefused("malformed")

    def test_truncated_jid_index(self):
        path = os.path.join(self.receipts, "jid-%s.json" % self.jid)
        with open(path, "w") as handle:
            handle.write('{"record":"jid_index"')
        self.assertRefused("malformed")

    def test_fifo_in_place_of_a_record(self):
        os.unlink(self.req_file)
        os.mkfifo(self.req_file, 0o600)
        self.assertRefused("not a regular file")

    def test_new_request_in_unsafe_store_writes_nothing(self):
        os.chmod(self.receipts, 0o755)
        before = self.snapshot()
        ret, code = self.run_job(new_request(), "configure")
        self.assertEqual(code, 1)
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(len(self.marker_lines()), self.executions)


if __name__ == "__main__":
    unittest.main()
