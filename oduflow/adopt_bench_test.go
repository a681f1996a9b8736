package oduflow

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// BenchmarkDrainAdoption is the "Drain + adoption" row: each round (b.N rounds: run it with
// -benchtime=5x or more) starts 8 requests on replica A, whose runs take benchApply on their minions,
// closes A 300 ms into the runs with no drain time (what a SIGTERM with an expired grace period leaves),
// and measures, from that Close, when replica B (WithAdoption at its default interval, the poll interval)
// has committed every request terminal. It reports the medians over the rounds of: close_to_terminal_ms,
// apply_left_ms (the minions' own remaining apply time: their runs' end after the Close), overhead_ms (the
// difference: what adoption adds) and poll_interval_ms (the goal: overhead <= one poll interval).
func BenchmarkDrainAdoption(b *testing.B) {
	// new_replica: the adopter starts after the Close (a restarted replica: its first round runs at New);
	// running_replica: it was running all along (its next round comes up to one interval after the Close).
	b.Run("new_replica", func(b *testing.B) { benchDrainAdoption(b, false) })
	b.Run("running_replica", func(b *testing.B) { benchDrainAdoption(b, true) })
}

func benchDrainAdoption(b *testing.B, running bool) {
	const (
		perRound   = 8
		benchApply = 1500 * time.Millisecond
		cutAfter   = 300 * time.Millisecond
	)
	e := startSim(b)
	tm := testTimers()
	var total, left, over []float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		var mu sync.Mutex
		var lastPublish time.Time
		a := e.dispatcher(WithTimers(tm), WithHooks(Hooks{Step: func(_ context.Context, _ RequestRef, s string) {
			if s == stepPublishReplied {
				mu.Lock()
				lastPublish = time.Now()
				mu.Unlock()
			}
		}}))
		type job struct{ minion, req string }
		var jobs []job
		for range perRound { // minions first: a minion's key takes a moment to make
			jobs = append(jobs, job{e.addMinion(fakeminion.WithDelay(benchApply)).ID(), uuid.NewString()})
		}
		for _, j := range jobs {
			mustStart(b, a, receipt.ProfileConfigure, j.minion, j.req)
		}
		for _, j := range jobs {
			waitClaimB(b, a, j.req, func(c *claims.Claim) bool { return c.Phase == claims.PhaseDispatched })
		}
		// the benchmark's cut point: Close comes this long after dispatch
		time.Sleep(cutAfter)
		for _, j := range jobs {
			if c := mustClaim(b, a, j.req); c.Phase.Final() {
				b.Fatalf("request final before the Close: %+v", c)
			}
		}
		var adopter *Dispatcher
		if running {
			adopter = e.dispatcher(WithTimers(tm), WithAdoption(0))
		}
		b.StartTimer()
		t0 := time.Now()
		_ = a.Close(closedContext())
		if !running {
			adopter = e.dispatcher(WithTimers(tm), WithAdoption(0))
		}
		for _, j := range jobs {
			waitClaimB(b, adopter, j.req, func(c *claims.Claim) bool { return c.Phase.Final() })
		}
		elapsed := time.Since(t0)
		b.StopTimer()
		for _, j := range jobs {
			if c := mustClaim(b, adopter, j.req); c.Status != receipt.StatusSucceeded {
				b.Fatalf("adopted request: %+v", c)
			}
		}
		mu.Lock()
		applyLeft := lastPublish.Add(benchApply).Sub(t0)
		mu.Unlock()
		total = append(total, ms(elapsed))
		left = append(left, ms(applyLeft))
		over = append(over, ms(elapsed-applyLeft))
		_ = adopter.Close(closedContext())
		b.StartTimer()
	}
	b.ReportMetric(median(total), "close_to_terminal_ms")
	b.ReportMetric(median(left), "apply_left_ms")
	b.ReportMetric(median(over), "overhead_ms")
	b.ReportMetric(ms(tm.PollInterval()), "poll_interval_ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func waitClaimB(b *testing.B, d *Dispatcher, req string, ok func(*claims.Claim) bool) {
	b.Helper()
	if !waitUntil(30*time.Second, func() bool {
		c, err := d.store.Get(context.Background(), req)
		return err == nil && ok(c)
	}) {
		b.Fatalf("request %s: condition not met", req)
	}
}
