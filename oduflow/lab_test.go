package oduflow

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// countingPublisher counts oduflow_job.run and oduflow_job.attest publish requests leaving the dispatcher.
type countingPublisher struct {
	Publisher
	runs, attests atomic.Int64
}

func (p *countingPublisher) Publish(ctx context.Context, req salt.PublishRequest) (*salt.PublishResult, error) {
	switch req.Fun {
	case funRun:
		p.runs.Add(1)
	case funAttest:
		p.attests.Add(1)
	}
	return p.Publisher.Publish(ctx, req)
}

// TestLabIntegration runs configure (succeeded) and production (failed, passed < total) through the
// Dispatcher against a real salt-master with the oduflow_job module synced, and shows that a repeated
// Start returns the same JID without a new publication. It needs the lab's ODUFLOW_SALT_* variables
// (eval "$(bash saltlab.sh env)") and skips otherwise.
func TestLabIntegration(t *testing.T) {
	master, events := os.Getenv("ODUFLOW_SALT_MASTER"), os.Getenv("ODUFLOW_SALT_EVENTS")
	keyFile, minion := os.Getenv("ODUFLOW_SALT_KEY_FILE"), os.Getenv("ODUFLOW_SALT_MINION")
	if master == "" || events == "" || keyFile == "" || minion == "" {
		t.Skip("ODUFLOW_SALT_MASTER/EVENTS/KEY_FILE/MINION unset: no real salt-master to test against " +
			"(eval \"$(bash saltlab.sh env)\" with the lab running)")
	}
	ctx := context.Background()
	client, err := salt.NewClient(master, salt.WithAuth(salt.UserKey("root", keyFile)), salt.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	pub := &countingPublisher{Publisher: client}
	d, err := New(pub, SaltEvents(events), WithClaimDir(claimDir(t)), WithLogger(quietLogger()), WithPKIDir(labPKIDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(closedContext()) }()

	ready, err := d.Ping(ctx, minion)
	if err != nil || !ready.Ready() {
		t.Fatalf("ping: %+v %v (is oduflow_job synced?)", ready, err)
	}
	t.Logf("ping: %+v", *ready)

	run := func(p receipt.Profile) (Response, string) { return labRun(t, d, minion, p) }
	cfg, cfgReq := run(receipt.ProfileConfigure)
	if cfg.Status != receipt.StatusSucceeded || cfg.Total == 0 || cfg.Passed != cfg.Total {
		t.Fatalf("configure: %+v", cfg)
	}
	prod, _ := run(receipt.ProfileProduction)
	if prod.Status != receipt.StatusFailed || prod.Passed >= prod.Total {
		t.Fatalf("production: %+v", prod)
	}
	if n := pub.runs.Load(); n != 2 {
		t.Fatalf("run publications %d", n)
	}
	// A module that signs its run's return (this repository's) is proven by that return: no attest job.
	caps, err := d.capabilities(ctx, minion)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("module signs its run return: %v; attest publications: %d", caps.RunProof, pub.attests.Load())
	if caps.RunProof && pub.attests.Load() != 0 {
		t.Fatalf("%d attest publications for receipts the runs' own signed returns prove", pub.attests.Load())
	}

	// Repeated Start: same JID, no publication (counted at the client and watched on the master's bus).
	st, err := salt.SubscribeEvents(ctx, events, salt.WithTagPrefixes("salt/job/"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	again := mustStart(t, d, receipt.ProfileConfigure, minion, cfgReq)
	if *again.JID != *cfg.JID || again.Status != receipt.StatusSucceeded {
		t.Fatalf("repeat: %+v", again)
	}
	timeout := time.After(3 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-st.Events():
			if ev.JobNew != nil && ev.JobNew.Fun == funRun {
				t.Fatalf("a new oduflow_job.run was published: %s", ev.JobNew.JID)
			}
		case <-timeout:
			done = true
		}
	}
	if n := pub.runs.Load(); n != 2 {
		t.Fatalf("run publications after repeat %d", n)
	}
	t.Logf("repeat start: jid=%s status=%s; run publications in total: %d", *again.JID, again.Status, pub.runs.Load())
}

// labPKIDir is the lab master's pki_dir (ODUFLOW_SALT_PKI_DIR, else Salt's default).
func labPKIDir() string {
	if dir := os.Getenv("ODUFLOW_SALT_PKI_DIR"); dir != "" {
		return dir
	}
	return defaultPKIDir
}

// labRun starts a new request of profile p for minion and watches its status until it is not running (3
// minutes at most); the JID never changes meanwhile.
func labRun(t *testing.T, d *Dispatcher, minion string, p receipt.Profile) (Response, string) {
	t.Helper()
	req := uuid.NewString()
	first := mustStart(t, d, p, minion, req)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for r, err := range d.Watch(ctx, minion, req, p) {
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if r.Status != receipt.StatusRunning {
			if *r.JID != *first.JID {
				t.Fatalf("jid changed: %s -> %s", *first.JID, *r.JID)
			}
			t.Logf("%s: minion_id=%s request_id=%s jid=%s status=%s passed=%d total=%d error_code=%q",
				p, r.MinionID, r.RequestID, *r.JID, r.Status, r.Passed, r.Total, r.ErrorCode)
			return r, req
		}
	}
	t.Fatalf("%s: the watch ended while running", p)
	return Response{}, ""
}
