package oduflow

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/receipt"
)

// TestObserveCapabilitiesAndProof: one dispatched request reports its capability check and its receipt
// proof through Hooks.Observe, once each, with durations that cover the calls' publications (a benchmark
// splits a request's time with them), and Ping reports its capability check too.
func TestObserveCapabilitiesAndProof(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	var mu sync.Mutex
	obs := map[string][]time.Duration{}
	var pub []time.Duration
	d := e.dispatcher(WithHooks(Hooks{Observe: func(op string, dur time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		obs[op] = append(obs[op], dur)
		if op == "publish" {
			pub = append(pub, dur)
		}
	}}))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	caps, proofs, pubs := obs["capabilities"], obs["proof"], len(pub)
	minPub := time.Duration(0)
	for i, p := range pub {
		if i == 0 || p < minPub {
			minPub = p
		}
	}
	mu.Unlock()
	if len(caps) != 1 || len(proofs) != 1 || pubs != 3 { // capabilities, run, attest
		t.Fatalf("observed capabilities %v, proof %v, %d publishes", caps, proofs, pubs)
	}
	if caps[0] < minPub || proofs[0] < minPub {
		t.Fatalf("capability check %v or proof %v shorter than a publication (%v)", caps[0], proofs[0], minPub)
	}
	if _, err := d.Ping(context.Background(), m.ID()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(obs["capabilities"]) != 2 {
		t.Fatalf("Ping's capability check not observed: %v", obs["capabilities"])
	}
}
