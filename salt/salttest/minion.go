package salttest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// Job is one publication as a simulated minion runs it.
type Job struct {
	JID string
	Fun string
	// Args and Kwargs are shared by every minion the publication reached: read them, never
	// modify them.
	Args     []any          // positional arguments (after Salt's load_args_and_kwargs)
	Kwargs   map[string]any // keyword arguments: the {"__kwarg__": true} map and name=value strings
	MinionID string
	// Extra context, like the __pub_* values Salt passes to functions with **kwargs.
	User     string
	Metadata map[string]any // kwargs.metadata of the publish, nil when absent
}

// MinionHandler runs a job and returns its return value and retcode. It may block (a long
// state run); it must return promptly once ctx is cancelled (Close, RestartMinion). Its return
// is fired as salt/job/<jid>/ret/<id>; success is retcode == 0.
type MinionHandler func(ctx context.Context, job Job) (ret any, retcode int)

type minion struct {
	id       string
	h        MinionHandler
	online   bool
	jidQueue []string
	ctx      context.Context
	cancel   context.CancelFunc
	running  map[string]*runningJob
	// fleet behaviour (fleet.go): frozen answers nothing, find_job included; loseReturns fires no
	// return; duplicateReturns fires each return twice.
	loseReturns, duplicateReturns bool
	frozen                        atomic.Bool // read by every job without the master's lock
}

type runningJob struct {
	pid     int
	jid     string
	fun     string
	arg     []any
	tgt     any
	tgtType string
	user    string
}

// AddMinion registers an accepted minion key. A nil handler makes a generic minion: test.ping,
// test.sleep, test.arg, state.apply and state.sls of the roles set with WithRole (others
// succeed), state.high, and the functions registered with RegisterFunc; anything else returns
// Salt's "'<fun>' is not available." with retcode 1. Adding an existing id replaces its handler
// and keeps its state (JID queue, running jobs).
func (s *Master) AddMinion(id string, h MinionHandler) {
	if h == nil {
		h = s.std
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.minions[id]; ok {
		m.h = h
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.minions[id] = &minion{id: id, h: h, online: true, ctx: ctx, cancel: cancel, running: map[string]*runningJob{}}
}

// RegisterFunc makes every minion run h for the function name (for example
// "oduflow_job.status"), in place of its own handler; a nil h removes the registration.
// Publications already delivered keep the handler they started with.
func (s *Master) RegisterFunc(name string, h MinionHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.funcs, name)
		return
	}
	s.funcs[name] = h
}

// RestartMinion simulates a minion restart: running jobs are killed (no return is fired) and
// the in-memory JID queue is lost, so a republished JID runs again.
func (s *Master) RestartMinion(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.minions[id]
	if !ok {
		return
	}
	m.cancel()
	m.ctx, m.cancel = context.WithCancel(s.ctx)
	m.jidQueue = nil
	m.running = map[string]*runningJob{}
}

// SetMinionOnline takes a minion offline (its key stays accepted, so the master still lists it
// in "minions", but publications never reach it) or back online.
func (s *Master) SetMinionOnline(id string, online bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.minions[id]; ok {
		m.online = online
	}
}

// RunningJIDs lists the JIDs the minion id is running right now: a job's end (its return fired, or lost
// by its behaviour) removes it, and wakes WaitUntil.
func (s *Master) RunningJIDs(id string) []string { return s.runningJIDs(id) }

// runningJIDs lists the JIDs a minion is running right now.
func (s *Master) runningJIDs(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if m, ok := s.minions[id]; ok {
		for jid := range m.running {
			out = append(out, jid)
		}
	}
	return out
}

// deliver hands the publication to every targeted online minion that has not seen the JID
// among its last 100 (Salt's jid_queue).
func (s *Master) deliver(pub Publication, args []any, metadata any) {
	type start struct {
		ctx context.Context // the minion's process as of the publication (RestartMinion replaces it)
		m   *minion
		h   MinionHandler
		rj  *runningJob
	}
	starts := make([]start, 0, len(pub.Target))
	s.mu.Lock()
	for _, id := range pub.Target {
		m, ok := s.minions[id]
		if !ok || !m.online {
			continue
		}
		seen := false
		for _, j := range m.jidQueue {
			if j == pub.JID {
				seen = true
				break
			}
		}
		if seen {
			s.log.Info("minion ignored a duplicate jid", "minion", id, "jid", pub.JID)
			continue
		}
		m.jidQueue = append(m.jidQueue, pub.JID)
		if len(m.jidQueue) > s.cfg.minionJIDHistory {
			m.jidQueue = m.jidQueue[len(m.jidQueue)-s.cfg.minionJIDHistory:]
		}
		s.pid++
		rj := &runningJob{pid: s.pid, jid: pub.JID, fun: pub.Fun, arg: args, tgt: pub.tgt,
			tgtType: pub.tgtType, user: pub.User}
		m.running[pub.JID] = rj
		s.state.notify() // a leaf lock: safe under s.mu
		h := m.h
		if f, ok := s.funcs[pub.Fun]; ok {
			h = f
		}
		starts = append(starts, start{m.ctx, m, h, rj})
	}
	// every job is registered (find_job sees it) before any runs; they start once the lock is
	// released, rather than each queueing on it behind the others
	if len(starts) > 0 && s.returns[pub.JID] == nil {
		s.returns[pub.JID] = make(map[string]any, len(starts)) // every return recorded without a rehash
	}
	s.wg.Add(len(starts))
	s.mu.Unlock()
	if len(starts) == 0 {
		return
	}
	// every minion of the publication loads the same arguments: once for all (read only)
	la := loadedArgs{}
	la.pos, la.kwargs, la.funArgs = loadArgs(args)
	for _, st := range starts {
		go s.runJob(st.ctx, st.m, st.h, st.rj, pub, la, metadata)
	}
}

var kwargRe = regexp.MustCompile(`^[A-Za-z_][\w.-]*=`)

// loadArgs is salt.minion.load_args_and_kwargs: {"__kwarg__": true} maps and name=value
// strings become keyword arguments (values of name=value stay strings: no YAML parsing).
func loadArgs(args []any) (pos []any, kwargs map[string]any, funArgs []any) {
	kwargs = map[string]any{}
	for _, a := range args {
		switch x := a.(type) {
		case *omap:
			if v, ok := x.Get("__kwarg__"); ok && v == true {
				c := x.Clone()
				c.Del("__kwarg__")
				for k, v := range plain(c).(map[string]any) {
					kwargs[k] = v
				}
				funArgs = append(funArgs, c)
				continue
			}
		case string:
			if loc := kwargRe.FindStringIndex(x); loc != nil && !strings.Contains(x, "\n") &&
				!strings.HasPrefix(x[loc[1]:], "=") {
				kwargs[x[:loc[1]-1]] = x[loc[1]:]
				funArgs = append(funArgs, x)
				continue
			}
		}
		pos = append(pos, plain(a))
		funArgs = append(funArgs, a)
	}
	if pos == nil {
		pos = []any{}
	}
	if funArgs == nil {
		funArgs = []any{}
	}
	return pos, kwargs, funArgs
}

// loadedArgs are a publication's arguments as its minions load them (loadArgs).
type loadedArgs struct {
	pos, funArgs []any
	kwargs       map[string]any
}

func (s *Master) runJob(ctx context.Context, m *minion, h MinionHandler, rj *runningJob, pub Publication,
	la loadedArgs, metadata any) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		if m.running[rj.jid] == rj {
			delete(m.running, rj.jid)
		}
		s.mu.Unlock()
		s.state.notify()
	}()
	pos, kwargs, funArgs := la.pos, la.kwargs, la.funArgs
	job := Job{JID: pub.JID, Fun: pub.Fun, Args: pos, Kwargs: kwargs, MinionID: m.id, User: pub.User,
		Metadata: pub.Metadata}
	var ret any
	var retcode int
	if s.minionFrozen(m) {
		<-ctx.Done() // a stopped process: nothing runs, nothing answers, until it is restarted
		return
	}
	if pub.Fun == "saltutil.find_job" {
		ret, retcode = s.findJob(m, pos), 0
	} else {
		ret, retcode = callHandler(ctx, h, job)
	}
	if ctx.Err() != nil {
		return // minion restarted or simulator closed: the job died with its process
	}
	if !scalarReturn(ret) {
		if _, err := packEvent(ret); err != nil {
			ret, retcode = "The minion function caused an exception: return value cannot be serialized", 1
		}
	}
	s.fireReturn(m.id, pub, funArgs, metadata, ret, retcode)
}

// scalarReturn reports whether ret is a value that always encodes (test.ping's true, a text,
// a number): no need to try.
func scalarReturn(ret any) bool {
	switch ret.(type) {
	case nil, bool, string, int, int64, float64:
		return true
	}
	return false
}

func callHandler(ctx context.Context, h MinionHandler, job Job) (ret any, retcode int) {
	defer func() {
		if r := recover(); r != nil {
			ret, retcode = fmt.Sprintf("The minion function caused an exception: %v", r), 1
		}
	}()
	return h(ctx, job)
}

// findJob is saltutil.find_job: the running job's proc data, or {}.
func (s *Master) findJob(m *minion, pos []any) any {
	if len(pos) == 0 {
		return &omap{}
	}
	jid, _ := pos[0].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	rj, ok := m.running[jid]
	if !ok {
		return &omap{}
	}
	return newOmap("pid", rj.pid, "fun", rj.fun, "arg", rj.arg, "tgt", rj.tgt, "jid", rj.jid, "ret", "",
		"tgt_type", rj.tgtType, "user", rj.user)
}

// outputterFuns are the functions whose returns carry out: "highstate" (state.high does not).
var outputterFuns = map[string]bool{"state.apply": true, "state.sls": true, "state.highstate": true,
	"state.sls_id": true, "state.single": true}

func (s *Master) fireReturn(id string, pub Publication, funArgs []any, metadata any, ret any, retcode int) {
	s.mu.Lock()
	drop := take(s.faults.dropReturn, pub.JID)
	dup := !drop && take(s.faults.dupReturn, pub.JID)
	if m, ok := s.minions[id]; ok {
		drop = drop || (m.loseReturns && pub.Fun != "saltutil.find_job")
		dup = dup || (!drop && m.duplicateReturns)
	}
	var mirrors []*Master
	if len(s.mirrors) > 0 {
		mirrors = append(mirrors, s.mirrors...)
	}
	if s.returns[pub.JID] == nil {
		s.returns[pub.JID] = map[string]any{}
	}
	s.returns[pub.JID][id] = plain(ret)
	s.mu.Unlock()
	if drop {
		s.log.Info("fault: return dropped", "jid", pub.JID, "minion", id)
		return
	}
	tag := "salt/job/" + pub.JID + "/ret/" + id
	if err := s.fireReturnEncoded(tag, id, pub, funArgs, metadata, ret, retcode, dup, mirrors); err != nil {
		// unreachable for a handler's return (runJob replaced one that does not encode), and
		// funArgs and metadata were decoded from the publication
		s.log.Error("return not fired: cannot be encoded", "jid", pub.JID, "minion", id, "err", err)
	}
}

// fireReturnEncoded fires a return encoded straight into its frame (appendReturnData): on
// this master's bus, again with a later _stamp when dup, and the same data on every mirror's.
// Nothing is fired when it does not encode.
func (s *Master) fireReturnEncoded(tag, id string, pub Publication, funArgs []any, metadata any, ret any,
	retcode int, dup bool, mirrors []*Master) error {
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	buf := frameStart(tag, frameDataGuess)
	dataStart := len(buf)
	buf, err := appendReturnData(buf, id, pub, funArgs, metadata, ret, retcode, time.Now())
	if err != nil {
		return err
	}
	data := buf[dataStart:]
	if b != nil {
		b.publishQueued(b.frameFinish(buf)) // writes only before dataStart: data stays intact
	}
	if dup {
		again, _ := appendReturnData(nil, id, pub, funArgs, metadata, ret, retcode, time.Now())
		s.fireEncoded(tag, again)
	}
	for _, other := range mirrors {
		other.fireEncoded(tag, data)
	}
	return nil
}

// returnData is a minion's return event data as the master fires it, in its key order
// (_stamp is added when it is fired).
func returnData(id string, pub Publication, funArgs []any, metadata any, ret any, retcode int) *omap {
	data := newOmap("cmd", "_return", "id", id, "success", retcode == 0, "return", ret, "retcode", retcode,
		"jid", pub.JID, "fun", pub.Fun, "fun_args", funArgs, "user", pub.User)
	if out := returnOut(pub.Fun, ret, retcode); out != "" {
		data.Set("out", out)
	}
	if _, isMap := metadata.(*omap); isMap {
		data.Set("metadata", metadata)
	}
	return data
}

// returnOut is the return's "out" (its outputter), "" when it has none.
func returnOut(fun string, ret any, retcode int) string {
	if outputterFuns[fun] {
		return "highstate"
	}
	if _, isStr := ret.(string); isStr && retcode != 0 {
		return "nested"
	}
	return ""
}

// appendReturnData appends the encoding of returnData plus "_stamp": stamp(now) to b.
func appendReturnData(b []byte, id string, pub Publication, funArgs []any, metadata any, ret any, retcode int,
	now time.Time) ([]byte, error) {
	data := returnData(id, pub, funArgs, metadata, ret, retcode)
	data.Set("_stamp", stamp(now))
	return saltwire.Append(b, saltwire.Event, data)
}
