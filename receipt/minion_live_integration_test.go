package receipt_test

// Live checks of protocol 1 against a real Salt master and minion (issue 3,
// item 5). Everything here is env-gated:
//
//   - ODUFLOW_SALT_MASTER, ODUFLOW_SALT_EVENTS, ODUFLOW_SALT_KEY_FILE and
//     ODUFLOW_SALT_MINION (what `saltlab.sh env` prints) plus
//     ODUFLOW_SALT_MODULES_DIR (the master's salt://_modules directory) enable
//     the test at all;
//   - ODUFLOW_LAB_DISRUPTIVE=1 and ODUFLOW_SALTLAB_SH (the lab kit script)
//     enable the steps that restart the minion and stop the master.
//
// The test runs on the minion's host (the lab runs both daemons on one
// machine): it reads the minion's receipt store (ODUFLOW_RECEIPT_DIR, default
// /var/lib/oduflow/job-receipts), its log and its cache directory below the
// lab directory (ODUFLOW_SALTLAB_DIR, default: derived from the key file
// <lab>/cache/master/.root_key).
//
// The side-effect marker (why it proves "did not execute again"):
//   - the minion log: every job process logs "Starting a new job <jid> with
//     PID <pid>" and then, from that PID, one "Executing state <fun> for [...]"
//     line per state it really executes. For one JID the test counts the job
//     starts (proof that the publication reached the minion and ran the module)
//     and the executed states of those PIDs.
//   - the file roles.client_stack manages ($lab/out/client_stack.txt): its
//     content never changes, so file.managed leaves it alone and its mtime says
//     nothing. The test deletes it before a publication instead: a real
//     execution of the role creates it again, a refused one leaves it absent.
//   - the receipt store: the request record and the JID index of the request
//     keep their bytes, inode and mtime.
//
// Stopping the master "during an apply": the test stops it once the job
// process logs its first "Running state [" (its pillar and SLS fetches, which
// need the master, are done; stopped earlier, the job stalls on the fetch and
// finishes against the restarted master). Salt resends a return
// (return_retry_tries x 60 s) and zmq delivers it to a master restarted within
// that window, so a quick `restart master` does not lose it (seen on the lab:
// "Got return" from the new master 6 s later). The test therefore keeps the
// master down until the job process logs "The minion failed to return the
// job information for job <jid>" (about 3 minutes), then restarts it, reads
// the receipt through status, and checks that no return of that JID appeared
// on the bus for the rest of the test. The whole test takes about 4 minutes.
//
// Side effects on the lab: it deletes the minion's sls.p and
// highstate.cache.p (step 6 needs a clean slate; its final plain state.apply
// writes them again) and $lab/out/client_stack.txt (recreated by the role),
// writes the module into ODUFLOW_SALT_MODULES_DIR when it differs, and leaves
// both daemons running.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

func TestMinionModuleLiveIntegration(t *testing.T) {
	t.Parallel()
	lab := readLiveLab(t)
	if testing.Short() {
		t.Skip("-short: live checks against the lab skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	bus := newLiveBus(ctx, t, lab.events)
	defer bus.close()
	r := &liveRunner{t: t, ctx: ctx, lab: lab, bus: bus, jids: salt.NewJIDGenerator()}
	t.Logf("lab dir %s, minion %s, receipt store %s, disruptive steps: %v", lab.labDir, lab.minion, lab.receiptDir, lab.kit != "")

	// Step 0: clear the raw state caches so that step 6 can tell who writes them.
	for _, name := range rawCacheNames {
		t.Logf("step 0: %s/%s %s", lab.minionCache(), name, removeIfExists(t, filepath.Join(lab.minionCache(), name)))
	}
	if left := rawCacheFiles(t, lab.minionCache()); len(left) != 0 {
		t.Fatalf("step 0: raw caches still present: %v", left)
	}

	// Step 1: sync the embedded module and check its capabilities.
	module := receipt.MinionModule().Source
	t.Logf("step 1: module %s (%d bytes, sha256 %s) -> %s: %s", receipt.MinionModule().Name, len(module),
		receipt.MinionModule().SHA256, lab.modulesDir, writeModule(t, lab.modulesDir, module))
	jid, ret := r.call("saltutil.sync_modules")
	t.Logf("step 1: saltutil.sync_modules jid=%s retcode=%d -> %v", jid, ret.Retcode, ret.Return)
	if ret.Retcode != 0 {
		t.Fatalf("sync_modules failed: %v", ret.Return)
	}
	synced, err := os.ReadFile(filepath.Join(lab.minionCache(), "extmods", "modules", receipt.MinionModule().Name))
	if err != nil || !bytes.Equal(synced, module) {
		t.Fatalf("step 1: the minion's extmods copy differs from receipt.MinionModule().Source (err %v)", err)
	}
	jid, ret = r.call("oduflow_job.capabilities")
	caps, _ := ret.Return.(map[string]any)
	t.Logf("step 1: oduflow_job.capabilities jid=%s -> protocol=%v runtime_guard=%v runtime_guard_error=%q salt_version=%v multiprocessing=%v module_sha256=%v pillar_ready=%v",
		jid, caps["protocol"], caps["runtime_guard"], caps["runtime_guard_error"], caps["salt_version"], caps["multiprocessing"], caps["module_sha256"], caps["pillar_ready"])
	if p, _ := caps["protocol"].(int64); p != 1 || caps["runtime_guard"] != true ||
		caps["module_sha256"] != receipt.MinionModule().SHA256 || caps["multiprocessing"] != true {
		t.Fatalf("step 1: capabilities not ready: %v", ret.Return)
	}

	// Step 2: a configure apply through the module, then status.
	req1 := receipt.NewRequestID()
	jid1 := r.jids.Next()
	bind1 := receipt.Binding{MinionID: lab.minion, RequestID: req1, JID: string(jid1), Profile: receipt.ProfileConfigure}
	t.Logf("step 2: marker %s %s before the run", lab.stackMarker(), removeIfExists(t, lab.stackMarker()))
	t.Logf("step 2: store before: %s", storeCounts(t, lab.receiptDir))
	off := logSize(t, lab.minionLog())
	ret = r.callJID(jid1, "oduflow_job.run", req1, "configure", "")
	rc1 := receiptOf(t, ret, bind1)
	t.Logf("step 2: oduflow_job.run [%s configure \"\"] jid=%s -> %s", req1, jid1, encoded(t, rc1))
	if rc1.Status != receipt.StatusSucceeded || rc1.Passed != 3 || rc1.Total != 3 {
		t.Fatalf("step 2: want succeeded 3/3, got %+v", rc1)
	}
	tr := traceJob(t, lab.minionLog(), off, jid1)
	t.Logf("step 2: marker: minion log for jid %s: %d job start(s) (pids %v), %d executed state(s): %q", jid1, tr.starts, tr.pids, len(tr.executing), tr.executing)
	t.Logf("step 2: marker: %s exists after the run: %v", lab.stackMarker(), exists(t, lab.stackMarker()))
	if tr.starts != 1 || len(tr.executing) != 3 || !exists(t, lab.stackMarker()) {
		t.Fatal("step 2: the first run should have executed the role once (3 states, marker file recreated)")
	}
	disk1, req1State := storedReceipt(t, lab.receiptDir, req1)
	jid1State := statFile(t, filepath.Join(lab.receiptDir, "jid-"+string(jid1)+".json"))
	t.Logf("step 2: store after: %s; req-%s.json = %s; jid-%s.json = %s", storeCounts(t, lab.receiptDir), req1, req1State.data, jid1, jid1State.data)
	if disk1 != rc1 {
		t.Fatalf("step 2: stored receipt %+v differs from the returned one %+v", disk1, rc1)
	}
	sjid, ret := r.call("oduflow_job.status", req1, string(jid1), "configure")
	st1 := receiptOf(t, ret, bind1)
	t.Logf("step 2: oduflow_job.status [%s %s configure] jid=%s -> %s", req1, jid1, sjid, encoded(t, st1))
	if st1 != rc1 || encoded(t, st1) != encoded(t, rc1) {
		t.Fatalf("step 2: status %+v differs from the run's receipt %+v", st1, rc1)
	}

	// Step 4: restart the minion (its duplicate-JID memory is gone) and publish the same JID again.
	t.Run("restart_minion_same_jid", func(t *testing.T) {
		lab.disruptive(t)
		r := &liveRunner{t: t, ctx: ctx, lab: lab, bus: bus, jids: r.jids}
		counts := storeCounts(t, lab.receiptDir)
		t.Logf("step 4: marker %s %s before the replay", lab.stackMarker(), removeIfExists(t, lab.stackMarker()))
		r.kit("restart", "minion")
		r.waitMinion(90 * time.Second)
		off := logSize(t, lab.minionLog())
		ret := r.callJID(jid1, "oduflow_job.run", req1, "configure", "")
		again := receiptOf(t, ret, bind1)
		t.Logf("step 4: same publication again after the restart: oduflow_job.run [%s configure \"\"] jid=%s -> %s", req1, jid1, encoded(t, again))
		if again != rc1 {
			t.Fatalf("step 4: replay returned %+v, want the existing receipt %+v", again, rc1)
		}
		tr := traceJob(t, lab.minionLog(), off, jid1)
		t.Logf("step 4: marker: minion log for jid %s after the restart: %d job start(s) (pids %v), %d executed state(s) %q; lines: %q",
			jid1, tr.starts, tr.pids, len(tr.executing), tr.executing, tr.lines)
		markerBack := exists(t, lab.stackMarker())
		t.Logf("step 4: marker: %s recreated: %v", lab.stackMarker(), markerBack)
		if tr.starts != 1 {
			t.Fatalf("step 4: the minion should have started the duplicate job once (its memory is gone), saw %d", tr.starts)
		}
		if len(tr.executing) != 0 || markerBack {
			t.Fatal("step 4: the role executed again for a JID that already has a receipt")
		}
		reqNow := statFile(t, filepath.Join(lab.receiptDir, "req-"+req1+".json"))
		jidNow := statFile(t, filepath.Join(lab.receiptDir, "jid-"+string(jid1)+".json"))
		t.Logf("step 4: store: request record unchanged (bytes, inode %d, mtime %s): %v; jid index unchanged: %v; counts before %s, after %s",
			reqNow.ino, reqNow.mtime.UTC().Format(time.RFC3339Nano), reqNow.same(req1State), jidNow.same(jid1State), counts, storeCounts(t, lab.receiptDir))
		if !reqNow.same(req1State) || !jidNow.same(jid1State) {
			t.Fatal("step 4: the replay rewrote the request's store files")
		}
	})

	// Step 5: stop the master during an apply; the return is lost with it; recover the exact
	// receipt through status.
	var lostJID salt.JID
	t.Run("stop_master_during_apply", func(t *testing.T) {
		lab.disruptive(t)
		r := &liveRunner{t: t, ctx: ctx, lab: lab, bus: bus, jids: r.jids}
		lostJID = stopMasterDuringApply(t, r)
	})

	// Step 6: the module runs above wrote no raw state cache; a plain state.apply does.
	if left := rawCacheFiles(t, lab.minionCache()); len(left) != 0 {
		t.Fatalf("step 6: raw state caches written during the module runs: %v", left)
	}
	t.Logf("step 6: after the module runs, raw state caches in %s: none", lab.minionCache())
	jid, ret = r.call("state.apply", "roles.client_stack")
	sum := receipt.Reduce(ret.Return)
	t.Logf("step 6: plain state.apply roles.client_stack jid=%s retcode=%d -> reduced %+v", jid, ret.Retcode, sum)
	after := rawCacheFiles(t, lab.minionCache())
	t.Logf("step 6: after the plain state.apply, raw state caches in %s: %v", lab.minionCache(), after)
	for _, name := range rawCacheNames {
		if !exists(t, filepath.Join(lab.minionCache(), name)) {
			t.Fatalf("step 6: a plain state.apply should have written %s (control)", name)
		}
	}
	if lostJID != "" {
		tags, _ := bus.seen(lostJID)
		t.Logf("step 5 (end of test): events of jid %s seen on the bus during the whole test: %v", lostJID, tags)
		for _, tag := range tags {
			if strings.Contains(tag, "/ret/") {
				t.Fatalf("step 5: a return of %s appeared after all: %s", lostJID, tag)
			}
		}
	}
}

// stopMasterDuringApply publishes a production run of a new request and
// stops the master once the minion's job process is executing states (after
// its last master round trip: pillar and SLS fetch). The master stays down
// until the job process gives up returning: Salt resends a return
// (return_retry_tries, 60 s each) and a master restarted within that window
// still receives it, so only then is the return really lost. Then the master
// is restarted and the receipt is recovered through status.
func stopMasterDuringApply(t *testing.T, r *liveRunner) salt.JID {
	t.Helper()
	for attempt := 1; ; attempt++ {
		if jid, ok := tryStopMasterDuringApply(t, r, attempt); ok {
			return jid
		}
		if attempt == 3 {
			t.Skip("step 5: the minion returned before the master was down in 3 attempts: this lab is too fast " +
				"for the stop to lose a return")
		}
	}
}

// tryStopMasterDuringApply is one attempt of stopMasterDuringApply; false when the run's return reached
// the master before it went down (nothing to lose: the master is restarted and the caller tries again).
func tryStopMasterDuringApply(t *testing.T, r *liveRunner, attempt int) (salt.JID, bool) {
	t.Helper()
	lab, bus := r.lab, r.bus
	req2 := receipt.NewRequestID()
	jid2 := r.jids.Next()
	bind2 := receipt.Binding{MinionID: lab.minion, RequestID: req2, JID: string(jid2), Profile: receipt.ProfileProduction}
	off := logSize(t, lab.minionLog())
	from := bus.mark()
	if err := r.publish("oduflow_job.run", []any{req2, "production", ""}, jid2); err != nil {
		t.Fatalf("step 5: publish: %v", err)
	}
	published := time.Now()
	if _, ok := bus.wait(from, 10*time.Second, func(ev salt.Event) bool {
		return ev.JobNew != nil && ev.JobNew.JID == jid2
	}); !ok {
		t.Fatalf("step 5: no salt/job/%s/new", jid2)
	}
	line, ok := waitJobLog(t, lab.minionLog(), off, jid2, 20*time.Second, 2*time.Millisecond, func(msg string) bool {
		return strings.HasPrefix(msg, "Running state [")
	})
	if !ok {
		t.Fatalf("step 5: the minion did not start executing states for jid %s", jid2)
	}
	t.Logf("step 5: published oduflow_job.run [%s production \"\"] jid=%s; saw salt/job/%s/new; minion log %q after %s; stopping the master now",
		req2, jid2, jid2, line, time.Since(published).Round(time.Millisecond))
	r.kit("stop", "master")
	down := true
	defer func() { // a check that fails below must not leave the lab's master down for the tests after it
		if down {
			r.kit("restart", "master")
		}
	}()
	tags, _ := bus.seen(jid2)
	t.Logf("step 5: events of jid %s seen before the master went down: %v", jid2, tags)
	for _, tag := range tags {
		if strings.Contains(tag, "/ret/") {
			t.Logf("step 5 (attempt %d): the return arrived before the master went down; again with a new request", attempt)
			r.kit("restart", "master")
			down = false
			r.waitMinion(90 * time.Second)
			return "", false
		}
	}
	waitStart := time.Now()
	line, ok = waitJobLog(t, lab.minionLog(), off, jid2, 6*time.Minute, 100*time.Millisecond, func(msg string) bool {
		// 3006: the job process gives up after return_retry_tries; 3007 and later: the minion's
		// main process sends the return and drops it after its request timeout.
		return strings.Contains(msg, "failed to return the job information") ||
			(strings.HasPrefix(msg, "Timeout encountered while sending") && strings.Contains(msg, "'_return'"))
	})
	if !ok {
		t.Fatalf("step 5: the minion's job process did not give up returning jid %s", jid2)
	}
	t.Logf("step 5: master down; after %s the minion's job process gave up its return: %q", time.Since(waitStart).Round(time.Second), line)
	r.kit("restart", "master")
	down = false
	r.waitMinion(90 * time.Second)
	tr := traceJob(t, lab.minionLog(), off, jid2)
	t.Logf("step 5: minion log for jid %s: %d job start(s) (pids %v), %d executed state(s); lines:\n%s",
		jid2, tr.starts, tr.pids, len(tr.executing), indent(strings.Join(tr.lines, "\n")))
	sjid, ret := r.call("oduflow_job.status", req2, string(jid2), "production")
	got := receiptOf(t, ret, bind2)
	tags, gaps := bus.seen(jid2)
	t.Logf("step 5: oduflow_job.status [%s %s production] jid=%s (restarted master) -> %s", req2, jid2, sjid, encoded(t, got))
	disk, fs := storedReceipt(t, lab.receiptDir, req2)
	t.Logf("step 5: store: req-%s.json = %s", req2, fs.data)
	if got != disk {
		t.Fatalf("step 5: status %+v differs from the committed receipt %+v", got, disk)
	}
	if got.Status != receipt.StatusFailed || got.Passed != 2 || got.Total != 3 {
		t.Fatalf("step 5: want failed 2/3 (roles.client_production has one failing state), got %+v", got)
	}
	if len(tr.executing) != 3 {
		t.Fatalf("step 5: expected the role's 3 states in the minion log, saw %q", tr.executing)
	}
	t.Logf("step 5: events of jid %s on the bus (old and restarted master) up to the status answer: %v (gaps: %v)", jid2, tags, gaps)
	for _, tag := range tags {
		if strings.Contains(tag, "/ret/") {
			t.Fatalf("step 5: the run's return reached a master (%s): nothing was lost", tag)
		}
	}
	return jid2, true
}
