package etcdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// raceChildEnv turns the re-executed test binary into one dispatcher process of
// TestThreeProcessesOneRequest (see runRaceChild).
const raceChildEnv = "ETCDTEST_RACE_CHILD"

// raceJob is what a child dispatcher process needs: the claims URL, the parent's master (over loopback),
// the request and the moment every goroutine of every process fires.
type raceJob struct {
	Claims, Master, Events, KeyFile, PKIDir, Minion, Request string
	StartAtUnixNano                                          int64
	Goroutines                                               int
}

// raceResult is the child's account of its Starts, written as JSON on stdout.
type raceResult struct {
	OK, Errors, Created int
	FirstError          string
	Late                bool // the process was ready only after the start time: no real race
}

// runRaceChild is the child's whole life: one Dispatcher on its own etcd client fires job.Goroutines
// Starts of one request at job's start time, waits for its worker (if it won the claim) and reports.
// It returns -1 when there is no job.
func runRaceChild() int {
	raw := os.Getenv(raceChildEnv)
	if raw == "" {
		return -1
	}
	var job raceJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := openCrashStore(ctx, job.Claims)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	var created atomic.Int32
	d, err := newSaltDispatcher(job.Master, job.Events, job.KeyFile, job.PKIDir, st,
		oduflow.WithHooks(oduflow.Hooks{Started: func(_ context.Context, _ oduflow.RequestRef, c bool) {
			if c {
				created.Add(1)
			}
		}}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var res raceResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range job.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			_, err := d.Start(ctx, job.Minion, job.Request, receipt.ProfileConfigure)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Errors++
				if res.FirstError == "" {
					res.FirstError = err.Error()
				}
				return
			}
			res.OK++
		}()
	}
	wait := time.Until(time.Unix(0, job.StartAtUnixNano))
	res.Late = wait <= 0
	// every process starts at one wall-clock instant (the parent's StartAtUnixNano): the race under test
	time.Sleep(wait)
	close(gate)
	wg.Wait()
	if err := d.Wait(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "wait for the worker:", err)
		return 2
	}
	_ = d.Close(closedContext())
	res.Created = int(created.Load())
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// TestThreeProcessesOneRequest: 3 dispatcher processes, each with its own etcd client on the same prefix
// and all talking to one master, fire 300 concurrent Starts each of one request at the same moment.
// Exactly one claim is created, one oduflow_job.run is published for its JID, the minion executes once,
// every Start is answered and the request ends succeeded.
func TestThreeProcessesOneRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const procs, perProc = 3, 300
	st := newStore(t, windowsOf(crashTimers()))
	prefix := st.Prefix()
	m := newProtoMinion(newMinion())
	sim := startMaster(t, m)
	req := receipt.NewRequestID()
	job := raceJob{Claims: claimsURL(t, prefix), Master: sim.Addr(), Events: sim.EventsAddr(), KeyFile: sim.KeyFile(),
		PKIDir: sim.PKIDir(), Minion: m.id, Request: req, Goroutines: perProc,
		StartAtUnixNano: time.Now().Add(10 * time.Second).UnixNano()} // time for 3 race binaries to start on a loaded machine
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]raceResult, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), raceChildEnv+"="+string(data))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("child %d: %v; stderr:\n%s", i, err, stderr.String())
				return
			}
			if err := json.Unmarshal(stdout.Bytes(), &results[i]); err != nil {
				t.Errorf("child %d output %q: %v", i, stdout.String(), err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ok, created := 0, 0
	for i, r := range results {
		ok += r.OK
		created += r.Created
		if r.Late {
			t.Errorf("child %d was ready only after the shared start time", i)
		}
		if r.Errors != 0 {
			t.Errorf("child %d: %d Starts failed, first: %s", i, r.Errors, r.FirstError)
		}
	}
	claims := countClaims(t, st.Client(), prefix)
	c, err := st.Get(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	runs := sim.PublicationCount("oduflow_job.run", c.JID)
	t.Logf("%d Starts answered, %d created a claim; %d claims, %d runs for the JID (%d in all), %d executions",
		ok, created, claims, runs, sim.PublicationCount("oduflow_job.run", ""), m.runCount())
	if ok != procs*perProc || created != 1 || claims != 1 {
		t.Fatalf("%d of %d Starts answered, %d created, %d claims under the prefix", ok, procs*perProc, created, claims)
	}
	if runs != 1 || sim.PublicationCount("oduflow_job.run", "") != 1 || m.runCount() != 1 {
		t.Fatalf("%d publications for the JID (%d in all), %d executions at the minion", runs,
			sim.PublicationCount("oduflow_job.run", ""), m.runCount())
	}
	d, err := newSaltDispatcher(sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(closedContext())
	r, err := d.Status(context.Background(), m.id, req, receipt.ProfileConfigure)
	if err != nil || r.Status != receipt.StatusSucceeded || !c.Phase.Final() {
		t.Fatalf("final status %+v %v, claim phase %s", r, err, c.Phase)
	}
}
