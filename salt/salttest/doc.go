// Package salttest is a fake Salt master for tests (3006 by default, later masters through
// WithGeneration), in the way raft ships an in-memory transport and pgx a mock server: a master
// on real sockets (a ZMTP request port and the event bus), generic minions, fault injection and
// publication counts. It speaks Salt's real wire and
// is written independently of package salt (it imports nothing from this module), so the two
// do not share bugs; package salt and the dispatcher are tested against it, and so can a
// service that uses them.
//
// # Why it is not internal
//
// A service that drives Salt through this module has controllers of its own (an HTTP handler
// that starts a role, a reconciler that reads statuses back) and needs to test them against
// something that behaves like a master: that refuses a bad key, loses a reply, duplicates a
// return, restarts, and counts what was really published. Hiding the fake master under
// internal/ would leave each service to write its own, less faithful one, or to need a live
// Salt lab in unit tests. So it lives here, next to the client it mirrors, with a small API.
// It knows the wire only: nothing about receipts, profiles or the dispatcher, whose own
// simulated minion module plugs in as a MinionHandler.
//
// # Using it
//
// Start binds 127.0.0.1:<ephemeral> and a unix event socket in a temporary directory (WithDir
// to choose it; keep the path short). Point salt.NewClient at Addr with the root key in KeyFile,
// salt.SubscribeEvents at EventsAddr. AddMinion(id, nil) accepts a generic minion: test.ping,
// test.sleep, test.arg, state.apply and state.sls (roles succeed unless WithRole says
// otherwise, with returns shaped like a real 3006.0 minion's), state.high, saltutil.find_job,
// and any function registered with RegisterFunc. AddMinion(id, h) runs h instead.
// PublicationCount(fun, jid) and Publications tell what actually went out: the at-most-once
// assertion of a test. WaitUntil(ctx, cond) waits for a condition over them (and EventReaders,
// RunningJIDs) without polling: each publication, minion job start or end and event reader change
// wakes it. WithEauthUser configures external_auth users with ACLs (AllowOn,
// LabACL); WithMinimumAuthVersion behaves like 3006.17+; WithEventFraming selects bare
// (3006.0) or length-prefixed (3006.26+) event frames.
//
// Fleets: AddFleet(prefix, n, behave) adds n generic minions, each with a MinionBehavior (a delay,
// failures, a job that hangs so that saltutil.find_job reports it running, a frozen minion that
// answers nothing, a disconnected one, returns lost on the way or sent twice), changed later with
// SetMinionBehavior. MirrorReturnsTo fires every return on a second master's bus too (a
// multi-master pair whose minions return to both); the runner manage.present lists the minions
// that are online. WithEventReaderBuffer lets thousands of returns queue for one reader.
//
// WithGeneration selects the master generation: Generation3006 (default: 3006.0 as captured, and
// 3006.16 as run live, whose master behaves the same), Generation3007 (3007.2+ and the 3008 line, run
// live on 3007.8 and master: salt/job/<jid>/publish after /new on every publish; a blocking bus
// publisher, so one reader that stops reading holds every reader; a 0660 event socket whatever the
// configuration) and Generation3008 (Generation3007 plus minimum_auth_version 3 by default: from
// release notes, in no source run here, so a model of a release not yet run). FireClusterEvent sends a cluster peer's event
// (cluster/event/<peer>/<tag>, with __peer_id).
//
// Faults, each armed for one occurrence: DropNextReply (processed, e.g. published, but never
// answered), DelayNextReply, MalformNextReply, ExceptionNextReply (fails before anything is
// published), DropNextReturn, DuplicateNextReturn. Whole-master events: Restart (connections
// and readers dropped, root key rotated, same addresses), RotateKey, CloseEventBus,
// SendHeartbeat and WithHeartbeat (ZMTP PINGs to request peers), FireEvent, RestartMinion (jobs
// killed, JID queue lost), SetMinionOnline.
//
// # What it serves
//
// Request server (ret_port): a ZMTP 3.1 ROUTER over NULL security. REQ and DEALER peers send
// two frames (empty delimiter and body); the reply goes back on the same connection. It answers
// PING commands with PONG and can send PINGs itself, as later 3006 releases do.
//
// Requests are msgpack envelopes {enc, load, version}. Replies use Salt's request-channel
// dialect (use_bin_type=False: str family only, never str8 or bin) and Python's dict order.
// The order of ReqServerChannel.handle_message is kept: undecodable -> {msg: "bad load"}; not
// a map with enc and load -> "bad load"; version below WithMinimumAuthVersion -> "bad load";
// enc aes -> "bad load"; a non-map load -> "payload and load must be a dict"; unknown cmd -> {};
// missing cmd or any KeyError inside a command -> "Some exception handling minion payload".
//
// ClearFuncs: ping (the load echoed), publish (blacklist, check_minions, authentication by
// root key / eauth / token, authorization with ACLs whose string entries are regexes anchored
// at the start only, saltutil.find_job always allowed; auth failures reply a bare {error:
// {name, message}} and fire salt/job/<jid>/error with the whole load; no minions -> {jid: nil,
// minions: [], error}; then the events "<jid>" and salt/job/<jid>/new, the publication, and
// {enc: clear, load: {jid, minions, missing}}), runner (asynchronous {tag, jid}; salt/run/<jid>/new
// and /ret; test.arg, jobs.list_jobs, jobs.lookup_jid), wheel (synchronous; key.list_all; two
// event pairs like Salt), mk_token ("" on failure), get_token (false without token, {} when
// unknown or expired).
//
// Event bus: a unix stream socket <dir>/master_event_pub.ipc (on Generation3006 mode 0600, 0660
// with external_auth users, like 3006.0; 0660 on Generation3007+). Frames are msgpack
// {head: {}, body: bin(tag "\n\n" msgpack(data))} packed with use_bin_type=True. No replay; a
// reader whose bounded queue fills up is disconnected (Generation3006) or, on Generation3007+,
// blocks the bus for every reader. A reader whose connect() returned before
// an event is fired receives that event, so "subscribe, then publish" is reliable in tests.
//
// A publication runs the handler of every targeted online minion in its own goroutine, unless
// the minion saw the JID among its last 100 (Salt's jid_queue); the return is fired as
// salt/job/<jid>/ret/<id> with {cmd: _return, id, success, return, retcode, jid, fun, fun_args,
// user[, out][, metadata], _stamp}.
//
// The bytes are the client's own wire (internal/saltwire: ZMTP framing and Salt's two msgpack
// dialects, written once for package salt and this simulator); what the master does with them
// is written here. Because the two ends share a codec, the captured vectors of a real 3006.0
// master are the independent check (and saltwire's tests hold its codec against
// github.com/vmihailenco/msgpack/v5). A return is encoded straight into its frame, and frames
// queued for one reader go out in one vectored write (the same bytes on the stream, fewer
// system calls). The package's tests replay every
// captured request of a real 3006.0 master and compare replies and events structurally.
//
// # What it does not model
//
//   - No AES channel at all: no _auth (a clear _auth is answered "not accepted"), no minion
//     session keys, no 4505 publisher, no encrypted _return requests; minions are in-process.
//   - No job cache on disk (no .load.p, no jobs/ directories); jobs.lookup_jid reads memory.
//   - Only list, glob, pcre and compound targets (compound: globs, L@, E@, and/or/not,
//     parentheses); grain, pillar, ipcidr, range and nodegroup targets match nothing.
//   - One master user (root) with one key (.root_key); no publisher_acl users, no sudo_acl, no
//     per-user key files. Any user presenting the root key gets full access.
//   - Eauth: configured users only ("auto" accepts any password); no groups, no
//     permissive_acl, no ACL argument matching ({fun: {args, kwargs}}), no keep_acl_in_token;
//     failures are not padded to about 1 s.
//   - Multi-function jobs (fun as a list), batch publishing, syndics, salt-ssh, returners.
//   - name=value arguments become string kwargs without YAML parsing.
//   - No event trimming (max_event_size), no minion/refresh events, no state_events, no
//     sub/<id>/error events of failed state.sls runs, no job-cache mutation of returns.
//   - The ROUTER has no high-water mark and no ROUTER_HANDOVER; every peer is anonymous.
//   - The event socket's mode is set right after bind (a short window where it follows umask).
package salttest
