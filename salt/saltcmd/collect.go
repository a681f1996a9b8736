package saltcmd

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oduflow/oduflow-go/salt"
)

// Job is a run being followed. Results streams one Result per expected minion; Summary tells
// how the run ended once Results is drained (or Wait returned).
type Job struct {
	jid      salt.JID
	expected []string
	results  chan Result
	done     chan struct{}
	mu       sync.Mutex
	sum      Summary
}

// JID is the job's JID (of a batch: the presence ping's).
func (j *Job) JID() salt.JID { return j.jid }

// Minions are the minions the job expects an end for: the publish reply's minions and
// missing (of a batch: every minion of the target).
func (j *Job) Minions() []string { return slices.Clone(j.expected) }

// Results yields each expected minion's Result once, returns as they arrive and the others
// when their state is known, and ends when every minion is accounted for or the run's context
// is done. Breaking out of the loop does not stop the run; its context does.
func (j *Job) Results() iter.Seq[Result] {
	return func(yield func(Result) bool) {
		for r := range j.results {
			if !yield(r) {
				return
			}
		}
	}
}

// Wait waits for the end of the run and returns its Summary. Results not yet read stay
// readable.
func (j *Job) Wait() Summary {
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sum.clone()
}

// Summary is how a run ended.
type Summary struct {
	JIDs     []salt.JID // the job's JIDs (a batch has one per sub-job, after the presence ping's)
	Expected int        // minions expected to end (Job.Minions)
	Returned int        // minions that returned
	Failed   int        // minions that returned without success
	// NotReturned is every expected minion that did not return, with its state and reason.
	NotReturned []Result
	// Duplicates counts returns seen again (a retried return, or the same return on two
	// masters' buses); each minion's first return is the one that counts.
	Duplicates int
	// Ignored counts returns for this job from minions it did not expect, or that were not
	// master-handled returns (ParseReturn refused them).
	Ignored int
	// Gaps are the interruptions of the event buses during the run: events may have been lost
	// there, so the minions not yet returned were asked with saltutil.find_job at once.
	Gaps []BusGap
	// FindJobRounds counts the saltutil.find_job rounds.
	FindJobRounds int
	// Problems lists what went wrong while following the run (a find_job publish that failed,
	// a runner that did not answer); the minions concerned are accounted for all the same.
	Problems []string
}

// BusGap is a salt.Gap on one of the run's event buses.
type BusGap struct {
	Bus int // index: 0 is New's bus, then the WithEventBus ones in order
	Gap salt.Gap
	At  time.Duration // since the publish
}

// AllOK reports whether every expected minion returned with success.
func (s Summary) AllOK() bool { return s.Returned == s.Expected && s.Failed == 0 }

func (s Summary) clone() Summary {
	s.JIDs = slices.Clone(s.JIDs)
	s.NotReturned = slices.Clone(s.NotReturned)
	s.Gaps = slices.Clone(s.Gaps)
	s.Problems = slices.Clone(s.Problems)
	return s
}

// findJob states of a minion that has not returned.
type fjState int

const (
	fjNotAsked   fjState = iota
	fjAsked              // asked in the current round, no answer yet
	fjRunning            // the last answer: running
	fjNotRunning         // the last answer: not running (its return should be on its way)
	fjSilent             // did not answer the last round
)

type minionState struct {
	final      bool
	fj         fjState
	notRunning time.Time // when find_job said not running
	why        string    // the last find_job problem, if any
}

// returnGrace is how long a return may trail the minion's find_job answer "not running".
const returnGrace = time.Second

// follower is the state of one followed run, owned by its loop goroutine.
type follower struct {
	c       *Client
	ctx     context.Context
	bus     *busSet
	cmd     Cmd
	jid     salt.JID
	job     *Job
	start   time.Time
	minions map[string]*minionState
	open    int // minions not final

	round      salt.JID // the find_job JID in flight, "" when none
	roundEnd   time.Time
	roundAsked map[string]bool
	nextPoll   time.Time
	graceEnd   time.Time
	dirty      bool // a gap or a find_job answer: step must look again
	runnerJIDs map[salt.JID]chan any
}

// follow starts the loop of a run whose publish succeeded (or of a Watch).
func (c *Client) follow(ctx context.Context, bus *busSet, cmd Cmd, jid salt.JID, minions, missing []string,
	start time.Time, pollNow bool) *Job {
	expected := make([]string, 0, len(minions)+len(missing))
	seen := map[string]bool{}
	for _, id := range slices.Concat(minions, missing) {
		if !seen[id] {
			seen[id] = true
			expected = append(expected, id)
		}
	}
	job := &Job{jid: jid, expected: expected, results: make(chan Result, len(expected)), done: make(chan struct{})}
	job.sum = Summary{JIDs: []salt.JID{jid}, Expected: len(expected)}
	f := &follower{c: c, ctx: ctx, bus: bus, cmd: cmd, jid: jid, job: job, start: start,
		minions: make(map[string]*minionState, len(expected)), runnerJIDs: map[salt.JID]chan any{}}
	// one allocation for every minion's state (the map points into it), not one per minion
	states := make([]minionState, 0, len(expected))
	for _, id := range minions {
		if f.minions[id] == nil {
			states = append(states, minionState{})
			f.minions[id] = &states[len(states)-1]
			f.open++
		}
	}
	for _, id := range missing {
		if f.minions[id] == nil {
			states = append(states, minionState{})
			f.minions[id] = &states[len(states)-1]
			f.open++
		}
		f.end(Result{Minion: id, State: NotConnected, Retcode: -1,
			Reason: "the master has no accepted key for this minion (publish reply: missing)"})
	}
	f.nextPoll = start.Add(cmd.timeout())
	if pollNow {
		f.nextPoll = start
	}
	go f.loop()
	return job
}

// end records a minion's final result and streams it.
func (f *follower) end(r Result) {
	st := f.minions[r.Minion]
	if st == nil || st.final {
		return
	}
	st.final = true
	f.open--
	if r.JID == "" {
		r.JID = f.jid
	}
	if r.Fun == "" {
		r.Fun = f.cmd.Fun
	}
	r.Elapsed = time.Since(f.start)
	f.job.emit(r)
}

// emit counts a minion's final result and streams it.
func (j *Job) emit(r Result) {
	j.mu.Lock()
	if r.State == Returned {
		j.sum.Returned++
		if !r.Success {
			j.sum.Failed++
		}
	} else {
		j.sum.NotReturned = append(j.sum.NotReturned, r)
	}
	j.mu.Unlock()
	j.results <- r // capacity is one per expected minion: never blocks
}

func (f *follower) problem(format string, args ...any) {
	f.job.mu.Lock()
	f.job.sum.Problems = append(f.job.sum.Problems, fmt.Sprintf(format, args...))
	f.job.mu.Unlock()
}

func (f *follower) loop() {
	defer func() {
		f.bus.close()
		close(f.job.results)
		close(f.job.done)
	}()
	wake := f.nextPoll
	timer := time.NewTimer(time.Until(wake))
	defer timer.Stop()
	for f.open > 0 {
		select {
		case <-f.ctx.Done():
			f.finishAtDeadline()
			return
		case be := <-f.bus.events:
			f.handle(be)
			// A plain return changes no timing; only a gap or a find_job answer may.
			if !f.dirty || f.open == 0 {
				continue
			}
		case <-timer.C:
		}
		f.dirty = false
		if f.step(time.Now()) {
			f.finish()
			return
		}
		if w := f.wakeAt(); !w.Equal(wake) {
			wake = w
			timer.Stop()
			timer.Reset(time.Until(wake))
		}
	}
}

// wakeAt is the next time step has something to do.
func (f *follower) wakeAt() time.Time {
	switch {
	case f.round != "":
		return f.roundEnd
	case !f.graceEnd.IsZero():
		return f.graceEnd
	default:
		return f.nextPoll
	}
}

// handle takes one bus event.
func (f *follower) handle(be busEvent) {
	ev := be.ev
	if ev.Gap != nil {
		f.job.mu.Lock()
		f.job.sum.Gaps = append(f.job.sum.Gaps, BusGap{Bus: be.bus, Gap: *ev.Gap, At: time.Since(f.start)})
		f.job.mu.Unlock()
		f.c.log.Warn("saltcmd event bus gap", "jid", string(f.jid), "bus", be.bus, "reason", ev.Gap.Reason)
		// Returns (or find_job answers) may have been lost: ask the minions still out again, at
		// once, as soon as the bus is back (a "disconnected" gap is followed by a "reconnected"
		// one; asking while it is down would lose the answers too).
		if strings.Contains(ev.Gap.Reason, "reconnected") || !strings.Contains(ev.Gap.Reason, "disconnected") {
			f.repoll()
		}
		return
	}
	if strings.HasPrefix(ev.Tag, "salt/run/") {
		f.handleRunner(ev)
		return
	}
	if ev.JobReturn == nil {
		return
	}
	jr := ev.JobReturn
	switch jr.JID {
	case f.jid:
		r, err := ParseReturn(ev.Tag, ev.Data)
		st := f.minions[jr.MinionID]
		switch {
		case err != nil || st == nil:
			f.count(func(s *Summary) { s.Ignored++ })
		case st.final:
			f.count(func(s *Summary) { s.Duplicates++ })
		default:
			f.end(r)
			f.dirty = f.dirty || f.round != "" // the round may be complete now
		}
	case f.round:
		r, err := ParseReturn(ev.Tag, ev.Data)
		st := f.minions[jr.MinionID]
		if err != nil || st == nil || st.final || !f.roundAsked[jr.MinionID] || st.fj != fjAsked {
			return
		}
		f.dirty = true
		switch classifyFindJob(r, f.jid) {
		case findJobRunning:
			st.fj = fjRunning
		case findJobNotRunning:
			st.fj, st.notRunning = fjNotRunning, time.Now()
		default:
			st.why = "saltutil.find_job failed on the minion"
		}
	}
}

// repoll abandons the current find_job round or grace period and asks every minion still out
// at once.
func (f *follower) repoll() {
	f.dirty = true
	if f.round != "" {
		for id := range f.roundAsked {
			if st := f.minions[id]; !st.final {
				st.fj = fjNotAsked
			}
		}
		f.round, f.roundAsked = "", nil
	}
	f.graceEnd = time.Time{}
	f.nextPoll = time.Now()
}

func (f *follower) count(fn func(*Summary)) {
	f.job.mu.Lock()
	fn(&f.job.sum)
	f.job.mu.Unlock()
}

// step advances the find_job rounds; it reports true when every minion left is settled and the
// run can finish.
func (f *follower) step(now time.Time) bool {
	if f.round != "" {
		answered := true
		for id := range f.roundAsked {
			if st := f.minions[id]; !st.final && st.fj == fjAsked {
				answered = false
				break
			}
		}
		if !answered && now.Before(f.roundEnd) {
			return false
		}
		f.endRound()
	}
	if !f.graceEnd.IsZero() {
		return !now.Before(f.graceEnd)
	}
	if now.Before(f.nextPoll) {
		return false
	}
	f.startRound(now)
	return false
}

// startRound publishes saltutil.find_job to every minion not yet returned.
func (f *follower) startRound(now time.Time) {
	var ids []string
	for id, st := range f.minions {
		if !st.final {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	fjid := f.c.jids.Next()
	gather := f.cmd.gatherJobTimeout()
	f.count(func(s *Summary) { s.FindJobRounds++ })
	_, err := f.c.pub.Publish(f.ctx, salt.PublishRequest{Target: salt.ListTarget(ids...), Fun: "saltutil.find_job",
		Args: []any{string(f.jid)}, JID: fjid, Timeout: wireSeconds(gather)})
	f.round, f.roundEnd, f.roundAsked = fjid, now.Add(gather), make(map[string]bool, len(ids))
	for _, id := range ids {
		f.roundAsked[id] = true
		f.minions[id].fj = fjAsked
	}
	if err != nil {
		// Nobody was asked, or nobody is known to have been: the round ends at once and the
		// minions count as silent, which is all this client can prove.
		f.problem("find_job round %d: %v", f.job.sum.FindJobRounds, err)
		for _, id := range ids {
			f.minions[id].why = "saltutil.find_job could not be published: " + err.Error()
		}
		f.roundEnd = now
	}
}

// endRound settles a find_job round: while any minion runs the job, the next round comes
// GatherJobTimeout after this one started (Salt's cadence); otherwise the run finishes once the
// returns of minions that finished had a grace period to arrive.
func (f *follower) endRound() {
	running := false
	var lastNotRunning time.Time
	for id := range f.roundAsked {
		st := f.minions[id]
		if st.final {
			continue
		}
		switch st.fj {
		case fjAsked:
			st.fj = fjSilent
		case fjRunning:
			running = true
		case fjNotRunning:
			if st.notRunning.After(lastNotRunning) {
				lastNotRunning = st.notRunning
			}
		}
	}
	start := f.roundEnd.Add(-f.cmd.gatherJobTimeout())
	f.round, f.roundAsked = "", nil
	if running {
		f.nextPoll = start.Add(f.cmd.gatherJobTimeout())
		if now := time.Now(); f.nextPoll.Before(now) {
			f.nextPoll = now
		}
		return
	}
	f.graceEnd = time.Now()
	if !lastNotRunning.IsZero() {
		f.graceEnd = lastNotRunning.Add(returnGrace)
	}
}

// finish gives every minion left its final state: the job cache and the presence list are
// asked first when configured.
func (f *follower) finish() {
	if f.c.jobCache && f.open > 0 {
		f.lookupJobCache()
	}
	var silent []string
	for id, st := range f.minions {
		if !st.final && st.fj != fjNotRunning {
			silent = append(silent, id)
		}
	}
	present := map[string]bool{}
	presenceKnown := false
	if f.c.presence && len(silent) > 0 {
		if v, ok := f.callRunner("manage.present"); ok {
			// An empty list proves nothing (a master without minion data lists nobody).
			if l, isList := v.([]any); isList && len(l) > 0 {
				presenceKnown = true
				for _, e := range l {
					if s, isStr := e.(string); isStr {
						present[s] = true
					}
				}
			}
		}
	}
	for _, id := range f.sortedOpen() {
		st := f.minions[id]
		r := Result{Minion: id, Retcode: -1}
		switch {
		case st.fj == fjNotRunning:
			r.State, r.Reason = ReturnLost, "saltutil.find_job says the minion does not run the job, and no return arrived (finished with its return lost, or never received: a minion restarted since the publish)"
		case presenceKnown && !present[id]:
			r.State, r.Reason = NotConnected, "the master does not see the minion connected (manage.present)"
		default:
			r.State, r.Reason = NoResponse, "no return and no answer to saltutil.find_job"
			if st.why != "" {
				r.Reason += " (" + st.why + ")"
			}
		}
		f.end(r)
	}
}

// finishAtDeadline settles every minion left when the run's context is done: nothing more can
// be asked.
func (f *follower) finishAtDeadline() {
	for _, id := range f.sortedOpen() {
		st := f.minions[id]
		r := Result{Minion: id, Retcode: -1}
		switch st.fj {
		case fjRunning:
			r.State, r.Reason = Running, "saltutil.find_job last found the job running; the run ended first"
		case fjNotRunning:
			r.State, r.Reason = ReturnLost, "saltutil.find_job says the minion does not run the job, and no return arrived (finished with its return lost, or never received: a minion restarted since the publish)"
		case fjSilent:
			r.State, r.Reason = NoResponse, "no return and no answer to saltutil.find_job"
		default:
			r.State, r.Reason = NoResponse, "no return before the run ended (not asked with saltutil.find_job yet)"
		}
		f.end(r)
	}
}

func (f *follower) sortedOpen() []string {
	var ids []string
	for id, st := range f.minions {
		if !st.final {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// lookupJobCache asks jobs.lookup_jid for the job; a minion found there returned, with the
// retcode unknown (the runner gives the return data only).
func (f *follower) lookupJobCache() {
	v, ok := f.callRunner("jobs.lookup_jid", string(f.jid))
	m, isMap := v.(map[string]any)
	if !ok || !isMap {
		return
	}
	for _, id := range f.sortedOpen() {
		if data, found := m[id]; found {
			f.end(Result{Minion: id, State: Returned, Retcode: -1, Return: data,
				Reason: "from the master's job cache (jobs.lookup_jid): retcode and success unknown"})
		}
	}
}

// callRunner starts a runner and waits, at most GatherJobTimeout, for its return on the bus,
// taking the run's other events meanwhile.
func (f *follower) callRunner(fun string, args ...any) (any, bool) {
	res, err := f.c.pub.Runner(f.ctx, fun, args, nil)
	if err != nil {
		f.problem("runner %s: %v", fun, err)
		return nil, false
	}
	ch := make(chan any, 1)
	f.runnerJIDs[res.JID] = ch
	defer delete(f.runnerJIDs, res.JID)
	timer := time.NewTimer(f.cmd.gatherJobTimeout())
	defer timer.Stop()
	for {
		select {
		case v := <-ch:
			return v, true
		case be := <-f.bus.events:
			f.handle(be)
		case <-timer.C:
			f.problem("runner %s: no return within %s", fun, f.cmd.gatherJobTimeout())
			return nil, false
		case <-f.ctx.Done():
			return nil, false
		}
	}
}

// handleRunner takes salt/run/<jid>/ret of a runner this run started.
func (f *follower) handleRunner(ev salt.Event) {
	rest, _ := strings.CutPrefix(ev.Tag, "salt/run/")
	jid, suffix, _ := strings.Cut(rest, "/")
	ch, ok := f.runnerJIDs[salt.JID(jid)]
	if !ok || suffix != "ret" {
		return
	}
	if success, _ := ev.Data["success"].(bool); !success {
		f.problem("runner answered without success")
		return
	}
	select {
	case ch <- ev.Data["return"]:
	default:
	}
}
