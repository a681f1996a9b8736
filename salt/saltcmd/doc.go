// Package saltcmd is a general Salt client over the native wire: it runs any execution-module
// function on any target (salt TARGET FUN ARG...), streams every return as it arrives, and
// names every minion that did not return, and why. It is built on package salt (the request
// port and the event bus); it needs neither Python nor salt-api.
//
//	pub, _ := salt.NewClient("tcp://127.0.0.1:4506",
//		salt.WithAuth(salt.UserKey("root", "/var/cache/salt/master/.root_key")))
//	c, _ := saltcmd.New(pub, "unix:///var/run/salt/master/master_event_pub.ipc")
//	job, err := c.Run(ctx, saltcmd.Cmd{Target: salt.GlobTarget("web*"), Fun: "cmd.run",
//		Args: []any{"uptime"}})
//	for r := range job.Results() {
//		out, ok := r.Text() // cmd.run answers text; ok is false for anything else
//		fmt.Println(r.Minion, r.State, r.Retcode, out, ok)
//	}
//	sum := job.Wait() // sum.NotReturned names every minion that did not return
//
// # A run
//
// Run subscribes to every event bus first (the bus has no replay: a return fired before the
// subscription is lost, Salt issue #36720), then publishes with a JID it chose, then follows
// the job until every minion of the publish reply (minions, and missing ids of a list target)
// is accounted for, or the context is done. Every expected minion yields exactly one Result,
// in exactly one State:
//
//   - Returned: its return arrived: Retcode, Success (true only when the return says so), the
//     raw Return and typed decoders (Decode, Bool, Text, States);
//   - Running: saltutil.find_job last found the job running when the context ended;
//   - NoResponse: it answered neither the job nor saltutil.find_job;
//   - NotConnected: no accepted key (the publish reply's missing), or the master does not see it
//     connected (runner manage.present, WithPresenceCheck);
//   - ReturnLost: saltutil.find_job says the minion does not run the job, yet no return arrived
//     (finished with its return lost, or never received by a minion restarted since the publish);
//   - NotRun: a batch stopped before its turn.
//
// Silence is never success. The waiting follows Salt's LocalClient.get_iter_returns: after
// Cmd.Timeout (Salt's timeout, 5 s) the minions still out are asked with saltutil.find_job; a
// minion that answers that it still runs the job extends the wait, and is asked again every
// Cmd.GatherJobTimeout (gather_job_timeout, 10 s); a round ends early once every minion asked
// has answered (Salt waits the whole gather_job_timeout). A minion that finished is given one
// second for its return to arrive. Unlike Salt's cmd_iter (issues #48302, #42711), minions that
// did not return are not omitted: each ends with its state and a reason.
//
// Every interruption of an event bus (a salt.Gap: disconnection, reconnection, a consumer too
// slow, an undecodable frame) is recorded in the run's Summary.Gaps, and as soon as the bus is
// back every minion still out is asked with saltutil.find_job: a return lost in the gap becomes
// ReturnLost (or is found in the job cache), never a silent omission.
//
// The bus is hostile (any minion can fire any tag): a return counts only when its data says
// cmd "_return" and its id is the tag's minion (ParseReturn); others are counted in
// Summary.Ignored. A minion's first return counts; copies (a retried return, or the same return
// read on two masters' buses) are counted in Summary.Duplicates.
//
// # Targets and arguments
//
// ValidateTarget checks every target type Salt's CLI accepts (glob, list, grain, grain_pcre,
// pillar, pillar_pcre, pcre, compound, nodegroup, ipcidr) before anything is sent. Cmd.Args are
// sent as Salt's CLI sends them (a "name=value" string is a keyword argument on the minion);
// Cmd.Kwargs as the trailing {"__kwarg__": true, ...} map of Salt's Python API; Returner is
// --return; Metadata is echoed in every return.
//
// # Async, Watch and the job cache
//
// Async publishes and returns the JID and the expected minions at once. Watch(ctx, jid, minions)
// follows such a job later: it subscribes and asks the minions with saltutil.find_job at once.
// Returns fired before Watch subscribed are gone from the bus; with WithJobCache, minions not
// seen are looked up with the runner jobs.lookup_jid (Retcode -1: the runner does not give it).
// The oduflow dispatcher's deployment runs the master with job_cache: False, where the lookup
// finds nothing, so there a minion that returned before Watch ends ReturnLost.
//
// # Batch
//
// Batch is salt -b N|N%: a presence test.ping of the target (minions that do not answer get no
// job and keep the ping's state, as Salt prints "Minion ... did not respond. No job will be
// sent."), then a sliding window: as soon as a minion returns (and BatchWait passed), its slot
// goes to the next minion in a new sub-job (Salt's cli/batch.py). BatchMaxFailures stops
// giving slots after n failures (1 is --failhard); the minions left end NotRun. Results stream
// as they arrive and every minion of the target is accounted for.
//
// # Several masters
//
// With WithEventBus the client reads the buses of a hot multi-master pair and publishes through
// the one request port given to New: a return that reaches only one master (Salt's default), or
// both (issue #28785), counts once.
//
// # The guard
//
// Functions under oduflow_job. (GuardedPrefix) are refused with ErrGuardedFunction before any
// I/O: they read and write the receipts of the oduflow dispatcher, which claims every job before
// it publishes it; publishing them through a general client would bypass those claims.
//
// # Errors
//
// Refusals made before sending (ErrGuardedFunction, ErrInvalidTarget, ErrInvalidCommand) also
// match salt.ErrInvalidRequest and salt.ErrNotSent, so salt.IsNotPublished is true for them.
// Publish errors are package salt's, wrapped (salt.IsNotPublished, salt.IsOutcomeUnknown,
// salt.ErrNoMinions, salt.ErrAuthorization, ...). Problems while following a run (a find_job
// publish that failed, a runner that did not answer) do not fail the run: they are listed in
// Summary.Problems, and the minions concerned end in the state this client can prove.
package saltcmd
