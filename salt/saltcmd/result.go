package saltcmd

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

// State is how a minion expected by a run ended. Every expected minion ends in exactly one
// state, and only Returned carries the minion's answer: silence is never success.
type State int

const (
	// Returned: the minion's return arrived (Retcode, Success, Return are its own).
	Returned State = iota + 1
	// Running: the run ended (its context was done) while saltutil.find_job still found the
	// job running on the minion.
	Running
	// NoResponse: the minion answered neither the job nor saltutil.find_job (Salt's
	// "Minion did not return. [No response]"), or the run ended before it could be asked.
	NoResponse
	// NotConnected: the master has no accepted key for the minion (the publish reply's
	// missing), or the master's presence list (runner manage.present) lacks it (Salt's
	// "Minion did not return. [Not connected]").
	NotConnected
	// ReturnLost: saltutil.find_job answered that the minion does not run the job, yet no return
	// arrived and no job cache had it: the job finished and its return was lost (on the way,
	// during a bus gap, fired before Watch subscribed), or it never reached the minion (a minion
	// restarted since the publish answers find_job too). Its outcome is unknown.
	ReturnLost
	// NotRun: a batch stopped at its failure threshold before this minion's turn; nothing was
	// published to it.
	NotRun
)

var stateNames = [...]string{"", "returned", "running", "no_response", "not_connected", "return_lost", "not_run"}

// String is the state's name, as the CLI prints it.
func (s State) String() string {
	if s > 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// MarshalText makes a State a JSON string.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Result is the end of one expected minion in a run.
type Result struct {
	Minion string
	State  State
	// Reason says why a minion did not return (and, for a return recovered from the job
	// cache, that its retcode is unknown); empty for an ordinary return.
	Reason string
	// JID is the job the result belongs to (in a batch, the sub-job of the minion).
	JID salt.JID
	Fun string
	// Retcode is the minion's retcode, -1 when unknown (not returned, multi-function job,
	// return from the job cache).
	Retcode int
	// Success is the return's success flag: true only for a return that says so.
	Success bool
	// Return is the raw returned data (maps map[string]any, ints int64, floats float64).
	Return any
	// Out is the outputter the minion asked for ("highstate", "nested", ...), if any.
	Out string
	// Elapsed is the time from the publish (or Watch) to this result.
	Elapsed time.Duration
}

// OK reports whether the minion returned with success.
func (r Result) OK() bool { return r.State == Returned && r.Success }

// Decode stores the returned data in v (a pointer), through its JSON form: use it for a struct
// matching a function's return, e.g. map[string]StateResult of state.apply. It fails with
// ErrMalformedReturn when the minion did not return or the data does not fit v.
func (r Result) Decode(v any) error {
	if r.State != Returned {
		return errors.Wrapf(ErrMalformedReturn, "minion %s did not return (%s)", r.Minion, r.State)
	}
	b, err := json.Marshal(jsonable(r.Return))
	if err != nil {
		return errors.Wrapf(ErrMalformedReturn, "minion %s: %v", r.Minion, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.Wrapf(ErrMalformedReturn, "minion %s: %v", r.Minion, err)
	}
	return nil
}

// Bool is the return of a function that answers true or false (test.ping): ok is false when
// the minion did not return a boolean.
func (r Result) Bool() (v, ok bool) {
	v, ok = r.Return.(bool)
	return v, ok && r.State == Returned
}

// Text is the return of a function that answers text (cmd.run): ok is false when the minion
// did not return a string.
func (r Result) Text() (s string, ok bool) {
	s, ok = r.Return.(string)
	return s, ok && r.State == Returned
}

// StateResult is one entry of a state run's return (state.apply, state.sls, state.highstate).
type StateResult struct {
	Name     string         `json:"name"`
	Result   *bool          `json:"result"` // nil: test mode, would change
	Comment  string         `json:"comment"`
	Changes  map[string]any `json:"changes"`
	SLS      string         `json:"__sls__"`
	RunNum   int            `json:"__run_num__"`
	ID       string         `json:"__id__"`
	Duration float64        `json:"duration"`
}

// States decodes the return of a state run into its entries by state key. A state run that
// failed before running states returns a list of error strings: then States fails with
// ErrMalformedReturn and Return holds the list.
func (r Result) States() (map[string]StateResult, error) {
	var m map[string]StateResult
	if err := r.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// jsonable converts decoded msgpack values to values encoding/json accepts (map keys are
// already strings; []byte stays base64).
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case float64, float32, int64, int, uint64, bool, string, nil, []byte:
		return x
	default:
		return fmt.Sprint(x)
	}
}
