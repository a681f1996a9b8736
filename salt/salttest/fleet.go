package salttest

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// MinionBehavior is how one fleet minion (AddFleet) answers publications. The zero value is a
// healthy generic minion that answers at once.
type MinionBehavior struct {
	// Delay is how long every function except saltutil.find_job takes before it returns.
	Delay time.Duration
	// Fail makes every function except saltutil.find_job return a failure: the text
	// "ERROR: simulated failure of <fun>" with retcode 1 (success false).
	Fail bool
	// Hang makes every function except saltutil.find_job run until the minion is restarted or
	// the master closed: find_job reports the job running, and no return is ever fired.
	Hang bool
	// Frozen is a connected minion that answers nothing, find_job included (a SIGSTOPped
	// process): publications reach it and are lost when it is restarted.
	Frozen bool
	// Disconnected keeps the minion's key accepted (the master lists it in a publish reply's
	// minions) but no publication reaches it, as SetMinionOnline(id, false).
	Disconnected bool
	// LoseReturns runs jobs, but their returns never reach the bus (find_job then finds the
	// job finished); a return lost on its way to the master.
	LoseReturns bool
	// DuplicateReturns fires every return twice, as a minion that retries its return.
	DuplicateReturns bool
}

// AddFleet adds n generic minions with ids "<prefix>-0000", "<prefix>-0001", ... (four digits
// at least) and returns the ids in order. behave (nil: all healthy) gives minion i its
// behaviour; SetMinionBehavior changes it later. Each minion runs the generic handler (test.ping,
// test.sleep, test.arg, state.apply, ... and RegisterFunc functions) wrapped by its behaviour.
func (s *Master) AddFleet(prefix string, n int, behave func(i int) MinionBehavior) []string {
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
		var b MinionBehavior
		if behave != nil {
			b = behave(i)
		}
		s.AddMinion(ids[i], nil)
		s.SetMinionBehavior(ids[i], b)
	}
	return ids
}

// SetMinionBehavior replaces the behaviour of minion id (added with AddFleet or AddMinion with a
// nil handler); jobs already running keep the handler they started with.
func (s *Master) SetMinionBehavior(id string, b MinionBehavior) {
	base := s.std
	h := base
	if b.Delay > 0 || b.Fail || b.Hang {
		h = func(ctx context.Context, job Job) (any, int) {
			if b.Hang {
				<-ctx.Done()
				return nil, 0
			}
			if b.Delay > 0 {
				t := time.NewTimer(b.Delay)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil, 0
				case <-t.C:
				}
			}
			if b.Fail {
				return "ERROR: simulated failure of " + job.Fun, 1
			}
			return base(ctx, job)
		}
	}
	s.mu.Lock()
	m, ok := s.minions[id]
	if ok {
		m.h = h
		m.frozen.Store(b.Frozen)
		m.loseReturns = b.LoseReturns
		m.duplicateReturns = b.DuplicateReturns
		m.online = !b.Disconnected
	}
	s.mu.Unlock()
}

// minionFrozen reports whether m answers nothing.
func (s *Master) minionFrozen(m *minion) bool { return m.frozen.Load() }

// MirrorReturnsTo fires every minion return of s on other's event bus too, as a minion connected
// to both masters of a hot multi-master pair whose return reaches both (Salt issue #28785):
// a client reading both buses sees each return twice. Call it once per pair direction.
func (s *Master) MirrorReturnsTo(other *Master) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mirrors = append(s.mirrors, other)
}

// WithEventReaderBuffer bounds the frames queued per event-bus reader (default 1024). A reader
// whose queue is full is disconnected, like a Salt reader beyond ipc_write_buffer; a fleet of
// thousands of minions answering at once needs a larger queue, or a reader that keeps up.
func WithEventReaderBuffer(frames int) Option { return withEventReaderBuffer(frames) }

// presentIDs is the runner manage.present: the minions the master sees connected (online and
// not frozen minions count as connected: a stopped process keeps its TCP connection).
func (s *Master) presentIDs() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []any{}
	for _, id := range sortedMinionIDs(s.minions) {
		if s.minions[id].online {
			out = append(out, id)
		}
	}
	return out
}

func sortedMinionIDs(m map[string]*minion) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
