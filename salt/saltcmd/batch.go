package saltcmd

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oduflow/oduflow-go/salt"
)

// BatchSize is salt -b: Count minions at a time, or Percent of the target's minions.
type BatchSize struct {
	Count   int
	Percent float64
}

// ParseBatchSize reads "N" or "N%" as salt -b does ("%10" is accepted too).
func ParseBatchSize(s string) (BatchSize, error) {
	t := strings.TrimSpace(s)
	if strings.Contains(t, "%") {
		p, err := strconv.ParseFloat(strings.Trim(t, "%"), 64)
		if err != nil || p <= 0 || p > 100 || math.IsNaN(p) {
			return BatchSize{}, refuse(ErrInvalidCommand, "batch size %q: want N or N%% (0 < N <= 100)", s)
		}
		return BatchSize{Percent: p}, nil
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 1 {
		return BatchSize{}, refuse(ErrInvalidCommand, "batch size %q: want N or N%%", s)
	}
	return BatchSize{Count: n}, nil
}

// String is the size as salt -b takes it.
func (b BatchSize) String() string {
	if b.Percent > 0 {
		return strconv.FormatFloat(b.Percent, 'f', -1, 64) + "%"
	}
	return strconv.Itoa(b.Count)
}

// of is Salt's get_bnum: a percentage of n minions, at least 1, truncated above 1.
func (b BatchSize) of(n int) int {
	if b.Percent > 0 {
		res := b.Percent / 100 * float64(n)
		if res < 1 {
			return int(math.Ceil(res))
		}
		return int(res)
	}
	return b.Count
}

func (b BatchSize) valid() bool {
	return (b.Count > 0) != (b.Percent > 0) && b.Count >= 0 && b.Percent >= 0 && b.Percent <= 100
}

// BatchOption configures Batch.
type BatchOption func(*batchConfig)

type batchConfig struct {
	wait        time.Duration
	maxFailures int
}

// BatchWait is salt --batch-wait: a minion's slot is given again only this long after it
// returned.
func BatchWait(d time.Duration) BatchOption { return func(c *batchConfig) { c.wait = d } }

// BatchMaxFailures stops giving out slots once n minions failed (did not return, or returned
// without success); 1 is salt --failhard. The minions never started end NotRun. Default 0:
// never stop.
func BatchMaxFailures(n int) BatchOption { return func(c *batchConfig) { c.maxFailures = n } }

// Batch runs cmd like salt -b: a test.ping of the target first (Salt's presence ping; the
// minions that do not answer it get no job and end with the ping's state), then a sliding
// window of at most size sub-jobs, each minion's slot given to the next minion as soon as it
// returned (and BatchWait passed). Results stream as they arrive; every minion of the target
// ends in exactly one state, NotRun for those a failure threshold left out.
func (c *Client) Batch(ctx context.Context, cmd Cmd, size BatchSize, opts ...BatchOption) (*Job, error) {
	cmd = c.withDefaults(cmd)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	if !size.valid() {
		return nil, refuse(ErrInvalidCommand, "batch size %+v", size)
	}
	var cfg batchConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.wait < 0 || cfg.maxFailures < 0 {
		return nil, refuse(ErrInvalidCommand, "negative batch option")
	}
	ping := cmd
	ping.Fun, ping.Args, ping.Kwargs, ping.Returner, ping.Metadata = "test.ping", nil, nil, "", nil
	pingJob, err := c.Run(ctx, ping)
	if err != nil {
		return nil, err
	}
	expected := pingJob.Minions()
	job := &Job{jid: pingJob.JID(), expected: expected, results: make(chan Result, len(expected)),
		done: make(chan struct{})}
	job.sum = Summary{Expected: len(expected)}
	go c.runBatch(ctx, cmd, size, cfg, pingJob, job)
	return job, nil
}

// subDone is the end of one minion of a batch sub-job.
type subDone struct {
	r      Result
	sum    Summary
	hasSum bool
}

func (c *Client) runBatch(ctx context.Context, cmd Cmd, size BatchSize, cfg batchConfig, pingJob *Job, job *Job) {
	defer func() {
		close(job.results)
		close(job.done)
	}()
	var toRun []string
	for r := range pingJob.Results() {
		if r.State == Returned {
			toRun = append(toRun, r.Minion)
			continue
		}
		r.Reason = "no job sent: the minion did not answer the presence ping (" + r.State.String() + ": " + r.Reason + ")"
		job.emit(r)
	}
	job.merge(pingJob.Wait())
	slices.Sort(toRun)
	bnum := size.of(len(toRun))
	if bnum < 1 {
		bnum = 1
	}
	events := make(chan subDone, len(toRun)+1)
	active, failures, subJobs := 0, 0, 0
	var slotFree []time.Time // when the slots of returned minions may be given again (BatchWait)
	stopped := false
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for len(toRun) > 0 || active > 0 || subJobs > 0 {
		now := time.Now()
		slotFree = slices.DeleteFunc(slotFree, func(t time.Time) bool { return !t.After(now) })
		if !stopped && ctx.Err() == nil {
			free := bnum - active - len(slotFree)
			if free > len(toRun) {
				free = len(toRun)
			}
			if free > 0 {
				next := toRun[:free]
				toRun = toRun[free:]
				active += len(next)
				subJobs++
				c.startSubJob(ctx, cmd, next, events)
			}
		}
		if (stopped || ctx.Err() != nil) && len(toRun) > 0 {
			reason := "not run: the batch stopped after " + strconv.Itoa(failures) + " failures"
			if ctx.Err() != nil {
				reason = "not run: the batch's context ended first"
			}
			for _, id := range toRun {
				job.emit(Result{Minion: id, State: NotRun, Retcode: -1, Fun: cmd.Fun, Reason: reason})
			}
			toRun = nil
		}
		if active == 0 && subJobs == 0 && len(toRun) == 0 {
			break
		}
		select {
		case d := <-events:
			if d.hasSum {
				subJobs--
				job.merge(d.sum)
				continue
			}
			active--
			job.emit(d.r)
			if !d.r.OK() {
				failures++
				if cfg.maxFailures > 0 && failures >= cfg.maxFailures {
					stopped = true
				}
			}
			if cfg.wait > 0 {
				slotFree = append(slotFree, time.Now().Add(cfg.wait))
			}
		case <-ticker.C:
		}
	}
}

// startSubJob runs cmd on ids and forwards every result, then the sub-job's summary.
func (c *Client) startSubJob(ctx context.Context, cmd Cmd, ids []string, events chan<- subDone) {
	sub := cmd
	sub.Target = salt.ListTarget(ids...)
	j, err := c.Run(ctx, sub)
	if err != nil {
		state, why := NotRun, "not run: the sub-job was not published: "
		if !salt.IsNotPublished(err) {
			state, why = NoResponse, "the sub-job's publish has an unknown outcome: "
		}
		for _, id := range ids {
			events <- subDone{r: Result{Minion: id, State: state, Retcode: -1, Fun: cmd.Fun, Reason: why + err.Error()}}
		}
		events <- subDone{hasSum: true, sum: Summary{Problems: []string{fmt.Sprintf("sub-job on %d minions: %v", len(ids), err)}}}
		return
	}
	go func() {
		for r := range j.Results() {
			events <- subDone{r: r}
		}
		events <- subDone{hasSum: true, sum: j.Wait()}
	}()
}

// merge adds a sub-job's bookkeeping (not its minion counts: emit did those).
func (j *Job) merge(s Summary) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.sum.JIDs = append(j.sum.JIDs, s.JIDs...)
	j.sum.Duplicates += s.Duplicates
	j.sum.Ignored += s.Ignored
	j.sum.Gaps = append(j.sum.Gaps, s.Gaps...)
	j.sum.FindJobRounds += s.FindJobRounds
	j.sum.Problems = append(j.sum.Problems, s.Problems...)
}
