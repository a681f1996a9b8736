package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// bench is one dispatcher on an etcd Store, against an in-process simulated master.
type bench struct {
	sim   *salttest.Master
	st    *etcdstore.Store
	d     *oduflow.Dispatcher
	close func()
}

func newBench(ctx context.Context, endpoint string, tm oduflow.Timers) (*bench, error) {
	sim, stopSim, err := benchsim.StartInProcess(ctx)
	if err != nil {
		return nil, err
	}
	b, err := openBench(ctx, endpoint, "/bench-"+uuid.NewString()[:8], sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), tm)
	if err != nil {
		stopSim()
		return nil, err
	}
	b.sim = sim
	inner := b.close
	b.close = func() { inner(); stopSim() }
	return b, nil
}

// openBench opens a Store under a fresh prefix and a Dispatcher on it talking to the master at master.
func openBench(ctx context.Context, endpoint, prefix, master, events, keyFile, pkiDir string, tm oduflow.Timers) (*bench, error) {
	st, err := etcdstore.Open(ctx, etcdstore.WithEndpoints(strings.TrimPrefix(endpoint, "http://")),
		etcdstore.WithPrefix(prefix), etcdstore.WithStatusWindows(tm.LaunchGrace, tm.StatusExpiry))
	if err != nil {
		return nil, err
	}
	c, err := benchsim.NewClient(master, keyFile)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	d, err := oduflow.New(c, oduflow.SaltEvents(events, salt.WithLogger(benchkit.Discard())), oduflow.WithClaimStore(st),
		oduflow.WithPKIDir(pkiDir), oduflow.WithTimers(tm), oduflow.WithLogger(benchkit.Discard()))
	if err != nil {
		_ = c.Close()
		_ = st.Close()
		return nil, err
	}
	return &bench{st: st, d: d, close: func() {
		now, cancel := context.WithCancel(context.Background())
		cancel() // held requests never end: stop at once
		_ = d.Close(now)
		_ = c.Close()
		_ = st.Close()
	}}, nil
}

func (b *bench) addMinion(opts ...fakeminion.ModelOption) (*fakeminion.Model, error) {
	m := fakeminion.NewModel("client-"+uuid.NewString(), opts...)
	return m, fakeminion.Add(b.sim, m)
}

// cmdLatency: n samples of each of five operations, interleaved (the order rotates every sample):
// Start of a new request (the worker it launches is waited for outside the timed Start), one etcd
// transaction of the shape of the claim's create (If(CreateRevision == 0) Then(Put claim, Put index)) on
// fresh keys, Status of a running request (dispatched, its worker holding the request lock: a claim read
// and a lock read), one etcd read of that request's claim, and (what Status would cost if it read both
// keys in one read transaction) one read transaction of the claim and the lock key plus the claim's
// decode. The server is the member child (fsync on) with its data in -dir.
func cmdLatency(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	n := fs.Int("n", 200, "samples of each operation")
	base := fs.String("dir", "/var/cache", "parent of the etcd data directory")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	srv, endpoint, err := startServer(ctx, *base)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	b, err := newBench(ctx, endpoint, oduflow.DefaultTimers())
	if err != nil {
		return nil, err
	}
	defer b.close()
	// The running request Status reads lives on a second dispatcher (its worker never ends) sharing the
	// prefix, so that Wait on the first one waits for the Starts' workers only.
	hm, err := b.addMinion(fakeminion.WithHold())
	if err != nil {
		return nil, err
	}
	defer hm.Release()
	held, err := openBenchOn(ctx, b, endpoint)
	if err != nil {
		return nil, err
	}
	defer held.close()
	hreq := uuid.NewString()
	if _, err := held.d.Start(ctx, hm.ID(), hreq, receipt.ProfileConfigure); err != nil {
		return nil, err
	}
	if err := waitPhase(ctx, b.st, hreq, claims.PhaseDispatched); err != nil {
		return nil, err
	}
	cli := b.st.Client()
	claimKey := b.st.Prefix() + "/claims/" + hreq
	lockKey := b.st.Prefix() + "/locks/run/" + hreq
	value := strings.Repeat("x", 500) // a claim's size
	anchorPfx := "/anchor-" + uuid.NewString()[:8] + "/"

	const warmup = 5
	var start, txn, status, read, oneRead []time.Duration
	for i := 0; i < *n+warmup; i++ {
		m, err := b.addMinion()
		if err != nil {
			return nil, err
		}
		ops := []func() (time.Duration, error){
			func() (time.Duration, error) { // Start of a new request
				t0 := time.Now()
				_, err := b.d.Start(ctx, m.ID(), uuid.NewString(), receipt.ProfileConfigure)
				dt := time.Since(t0)
				if err != nil {
					return 0, err
				}
				return dt, b.d.Wait(ctx)
			},
			func() (time.Duration, error) { // one transaction of the claim's create shape
				k := anchorPfx + "claims/" + uuid.NewString()
				t0 := time.Now()
				resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
					Then(clientv3.OpPut(k, value), clientv3.OpPut(anchorPfx+"clients/"+m.ID()+"/"+k, "")).Commit()
				dt := time.Since(t0)
				if err == nil && !resp.Succeeded {
					err = fmt.Errorf("anchor transaction did not apply")
				}
				return dt, err
			},
			func() (time.Duration, error) { // Status of the running request
				t0 := time.Now()
				r, err := b.d.Status(ctx, hm.ID(), hreq, receipt.ProfileConfigure)
				dt := time.Since(t0)
				if err == nil && r.Status != receipt.StatusRunning {
					err = fmt.Errorf("status %s, want running", r.Status)
				}
				return dt, err
			},
			func() (time.Duration, error) { // one linearizable read of that claim
				t0 := time.Now()
				resp, err := cli.Get(ctx, claimKey)
				dt := time.Since(t0)
				if err == nil && len(resp.Kvs) != 1 {
					err = fmt.Errorf("claim not found")
				}
				return dt, err
			},
		}
		ops = append(ops, func() (time.Duration, error) { // what Status would cost in one read
			t0 := time.Now()
			resp, err := cli.Txn(ctx).Then(clientv3.OpGet(claimKey), clientv3.OpGet(lockKey, clientv3.WithCountOnly())).Commit()
			if err != nil {
				return 0, err
			}
			kvs := resp.Responses[0].GetResponseRange().GetKvs()
			if len(kvs) != 1 || resp.Responses[1].GetResponseRange().GetCount() != 1 {
				return 0, fmt.Errorf("claim or lock not found")
			}
			var c claims.Claim
			err = c.UnmarshalBinary(kvs[0].Value)
			return time.Since(t0), err
		})
		out := []*[]time.Duration{&start, &txn, &status, &read, &oneRead}
		for j := range ops {
			k := (i + j) % len(ops)
			dt, err := ops[k]()
			if err != nil {
				return nil, err
			}
			if i >= warmup {
				*out[k] = append(*out[k], dt)
			}
		}
	}
	return map[string]any{"n": *n, "start_us": benchkit.Summarize(start, time.Microsecond),
		"txn_us": benchkit.Summarize(txn, time.Microsecond), "status_us": benchkit.Summarize(status, time.Microsecond),
		"read_us": benchkit.Summarize(read, time.Microsecond), "claim_lock_one_read_us": benchkit.Summarize(oneRead, time.Microsecond)}, nil
}

// openBenchOn opens a second Store and Dispatcher under b's prefix, on b's master.
func openBenchOn(ctx context.Context, b *bench, endpoint string) (*bench, error) {
	return openBench(ctx, endpoint, b.st.Prefix(), b.sim.Addr(), b.sim.EventsAddr(), b.sim.KeyFile(),
		b.sim.PKIDir(), oduflow.DefaultTimers())
}

// waitPhase polls the claim until it reaches phase (or a final phase, an error).
func waitPhase(ctx context.Context, st *etcdstore.Store, req string, phase claims.Phase) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := st.Get(ctx, req)
		if err == nil && c.Phase == phase {
			return nil
		}
		if err == nil && c.Phase.Final() {
			return fmt.Errorf("request ended %s (%s) before reaching %s", c.Status, c.ErrorCode, phase)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("request not %s within 60 s (%v)", phase, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
