package salttest

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Outcome is what a simulated state run of a role produces.
type Outcome int

const (
	// Succeeds: three states, all result true, retcode 0 (like roles.client_stack).
	Succeeds Outcome = iota
	// Fails: three states, one result false, retcode 2 (like roles.client_production).
	Fails
	// RenderError: a list of one "Rendering SLS ... failed" string, retcode 1.
	RenderError
	// CompileError: a list of one "Cannot extend ID ..." string, retcode 1.
	CompileError
	// MissingRequisite: two states, the second false with a requisite error, retcode 2.
	MissingRequisite
)

// functions dispatches on the job's function name; unknown functions return Salt's
// "'<fun>' is not available." with retcode 1.
func functions(funcs map[string]MinionHandler) MinionHandler {
	return func(ctx context.Context, job Job) (any, int) {
		if h, ok := funcs[job.Fun]; ok && h != nil {
			return h(ctx, job)
		}
		return fmt.Sprintf("'%s' is not available.", job.Fun), 1
	}
}

// standard is the generic minion: with test.ping, test.sleep, test.arg, state.apply (every role succeeds
// unless listed in roles), state.sls (same as state.apply) and state.high.
func standard(roles ...map[string]Outcome) MinionHandler {
	r := map[string]Outcome{}
	for _, m := range roles {
		for k, v := range m {
			r[k] = v
		}
	}
	apply := stateApply(r, true)
	return functions(map[string]MinionHandler{
		"test.ping":   testPing(),
		"test.sleep":  testSleep(),
		"test.arg":    testArg(),
		"state.apply": apply,
		"state.sls":   apply,
		"state.high":  stateHigh(),
	})
}

// testPing returns true.
func testPing() MinionHandler {
	return func(context.Context, Job) (any, int) { return true, 0 }
}

// testSleep sleeps Args[0] seconds (stopping early when ctx ends) and returns true.
func testSleep() MinionHandler {
	return func(ctx context.Context, job Job) (any, int) {
		var secs float64
		if len(job.Args) > 0 {
			switch x := job.Args[0].(type) {
			case int64:
				secs = float64(x)
			case float64:
				secs = x
			}
		}
		t := time.NewTimer(time.Duration(secs * float64(time.Second)))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return true, 0
	}
}

// testArg returns {args, kwargs} like test.arg.
func testArg() MinionHandler {
	return func(_ context.Context, job Job) (any, int) {
		return map[string]any{"args": job.Args, "kwargs": job.Kwargs}, 0
	}
}

// stateApply simulates state.apply <role>: roles listed with an outcome produce returns shaped
// exactly like the captured lab returns; a role not listed succeeds when defaultSucceeds, else
// yields "No matching sls found", retcode 1. The kwarg test=True turns changing states into
// result null (retcode 0).
func stateApply(roles map[string]Outcome, defaultSucceeds bool) MinionHandler {
	return func(_ context.Context, job Job) (any, int) {
		if len(job.Args) == 0 {
			return []any{"No Top file or master_tops data matches found."}, 2
		}
		role, _ := job.Args[0].(string)
		o, ok := roles[role]
		if !ok && !defaultSucceeds {
			return []any{fmt.Sprintf("No matching sls found for '%s' in env 'base'", role)}, 1
		}
		test, _ := job.Kwargs["test"].(bool)
		return stateReturn(role, o, test)
	}
}

// stateReturn builds the return of a state run of role with the given outcome.
func stateReturn(role string, o Outcome, test bool) (any, int) {
	clock := time.Now()
	base := role[strings.LastIndex(role, ".")+1:]
	base = strings.TrimPrefix(base, "client_")
	words := strings.ReplaceAll(base, "_", " ")
	file := "/srv/saltlab/out/client_" + base + ".txt"
	ret := &omap{}
	switch o {
	case RenderError:
		return []any{"Rendering SLS 'base:" + role + "' failed: while parsing a flow sequence\n  in \"<unicode string>\", " +
			"line 4, column 13\ndid not find expected ',' or ']'\n  in \"<unicode string>\", line 5, column 1"}, 1
	case CompileError:
		return []any{"Cannot extend ID 'id_that_does_not_exist' in 'base:" + role + "'. It is not part of the high state.\n" +
			"This is likely due to a missing include statement or an incorrectly typed ID.\nEnsure that a state with an ID " +
			"of 'id_that_does_not_exist' is available\nin environment 'base' and to SLS '" + role + "'"}, 1
	case MissingRequisite:
		ret.Set("test_|-runs_fine_|-runs fine_|-succeed_without_changes",
			testEntry("runs_fine", "runs fine", role, 0, true, clock))
		ret.Set("test_|-needs_missing_|-needs a missing id_|-succeed_without_changes", newOmap(
			"changes", &omap{}, "result", false, "duration", 0.002, "start_time", startTime(clock),
			"comment", "The following requisites were not found:\n                   require:\n"+
				"                       test: id_that_does_not_exist\n",
			"__run_num__", 1, "__sls__", role, "__id__", "needs_missing", "name", "needs a missing id"))
		return ret, 2
	case Fails:
		ret.Set("test_|-"+base+"_ok_|-"+words+" ok_|-succeed_without_changes",
			testEntry(base+"_ok", words+" ok", role, 0, true, clock))
		ret.Set("test_|-"+base+"_fails_|-"+words+" deliberately fails_|-fail_without_changes",
			testEntry(base+"_fails", words+" deliberately fails", role, 1, false, clock))
	default:
		ret.Set("test_|-"+base+"_step_one_|-"+words+" step one_|-succeed_without_changes",
			testEntry(base+"_step_one", words+" step one", role, 0, true, clock))
		ret.Set("test_|-"+base+"_step_two_|-"+words+" step two_|-succeed_without_changes",
			testEntry(base+"_step_two", words+" step two", role, 1, true, clock))
	}
	fileEntry := newOmap("changes", newOmap("diff", "New file"), "comment", "File "+file+" updated",
		"name", file, "result", true, "__sls__", role, "__run_num__", 2, "start_time", startTime(clock),
		"duration", 34.965, "__id__", file)
	if test {
		fileEntry.Set("changes", newOmap("newfile", file))
		fileEntry.Set("comment", "The file "+file+" is set to be changed\nNote: No changes made, actual changes may\n"+
			"be different due to other states.")
		fileEntry.Set("result", nil)
	}
	ret.Set("file_|-"+file+"_|-"+file+"_|-managed", fileEntry)
	if o == Fails {
		return ret, 2
	}
	return ret, 0
}

func startTime(t time.Time) string { return t.Format("15:04:05.000000") }

func testEntry(id, name, sls string, run int, ok bool, clock time.Time) *omap {
	comment := "Success!"
	if !ok {
		comment = "Failure!"
	}
	return newOmap("name", name, "changes", &omap{}, "result", ok, "comment", comment, "__sls__", sls,
		"__run_num__", run, "start_time", startTime(clock), "duration", 1.073, "__id__", id)
}

// stateHigh simulates state.high <high data>: every state id gives one entry; the function
// test.fail_without_changes fails (result false, retcode 2), everything else succeeds.
func stateHigh() MinionHandler {
	return func(_ context.Context, job Job) (any, int) {
		if len(job.Args) == 0 {
			return "Passed invalid arguments: high() missing 1 required positional argument: 'data'", 1
		}
		high, ok := job.Args[0].(map[string]any)
		if !ok {
			return []any{"High data is not a dictionary and is invalid"}, 1
		}
		ret, retcode, run := &omap{}, 0, 0
		clock := time.Now()
		for _, id := range sortedKeys(high) {
			body, ok := high[id].(map[string]any)
			if !ok {
				return []any{fmt.Sprintf("ID %s in SLS %s is not a dictionary", id, "__sls__")}, 1
			}
			sls, _ := body["__sls__"].(string)
			for _, mod := range sortedKeys(body) {
				if strings.HasPrefix(mod, "__") {
					continue
				}
				decl, _ := body[mod].([]any)
				fn, name := "", id
				for _, d := range decl {
					switch x := d.(type) {
					case string:
						fn = x
					case map[string]any:
						if n, ok := x["name"].(string); ok {
							name = n
						}
					}
				}
				if i := strings.Index(mod, "."); i >= 0 { // dotted form: "test.succeed_without_changes"
					mod, fn = mod[:i], mod[i+1:]
				}
				good := fn != "fail_without_changes"
				if !good {
					retcode = 2
				}
				ret.Set(mod+"_|-"+id+"_|-"+name+"_|-"+fn, testEntry(id, name, sls, run, good, clock))
				run++
			}
		}
		return ret, retcode
	}
}
