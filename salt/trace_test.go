package salt_test

import (
	"context"
	"testing"

	"github.com/oduflow/oduflow-go/internal/salttrace"
	"github.com/oduflow/oduflow-go/salt"
)

// TestPublishTrace: a publish carrying an internal trace stamps every phase of its path, in
// order: connect and handshake on a fresh connection, the PING proof instead on a reused one.
func TestPublishTrace(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	addr, key := e.sim.Addr(), e.sim.KeyFile()
	req := salt.PublishRequest{Target: salt.ListTarget(simMinion), Fun: "test.ping", JID: e.jids.Next()}
	fresh := []salttrace.Phase{salttrace.Start, salttrace.Authed, salttrace.Encoded, salttrace.Connected,
		salttrace.Handshaken, salttrace.Sent, salttrace.Replied, salttrace.Returned, salttrace.Decoded, salttrace.Done}
	reused := []salttrace.Phase{salttrace.Start, salttrace.Authed, salttrace.Encoded, salttrace.Proven,
		salttrace.Sent, salttrace.Replied, salttrace.Returned, salttrace.Decoded, salttrace.Done}
	check := func(name string, tr *salttrace.Trace, want []salttrace.Phase) {
		t.Helper()
		stamped := map[salttrace.Phase]bool{}
		for i, p := range want {
			stamped[p] = true
			if tr.At[p].IsZero() {
				t.Fatalf("%s: phase %s not stamped", name, p)
			}
			if i > 0 && tr.At[p].Before(tr.At[want[i-1]]) {
				t.Fatalf("%s: phase %s before %s", name, p, want[i-1])
			}
		}
		for p := salttrace.Phase(0); p < salttrace.NumPhases; p++ {
			if !stamped[p] && !tr.At[p].IsZero() {
				t.Fatalf("%s: phase %s stamped", name, p)
			}
		}
	}
	for _, reuse := range []bool{false, true} {
		opts := []salt.ClientOption{salt.WithAuth(salt.UserKey("root", key))}
		if reuse {
			opts = append(opts, salt.WithConnectionReuse())
		}
		c, err := salt.NewClient(addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			var tr salttrace.Trace
			if _, err := c.Publish(salttrace.With(context.Background(), &tr), req); err != nil {
				t.Fatal(err)
			}
			switch {
			case reuse && i == 1:
				check("reused", &tr, reused)
			default:
				check("fresh", &tr, fresh)
			}
		}
		_ = c.Close()
	}
	// no trace in the context: nothing to stamp, nothing breaks
	c, _ := salt.NewClient(addr, salt.WithAuth(salt.UserKey("root", key)))
	defer c.Close()
	if _, err := c.Publish(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}
