// Package salttest is a Salt 3006 master simulator for tests and the demo. It speaks Salt's real
// wire over real sockets, and it is written independently of package salt (it imports nothing
// from this module) so that the two do not share bugs.
//
// # What it serves
//
// Request server (ret_port): a small ZMTP 3.1 ROUTER over NULL security on
// 127.0.0.1:<ephemeral> (RequestAddr). REQ and DEALER peers send two frames (empty delimiter and
// body); the reply goes back on the same connection. It answers PING commands with PONG and can
// send PINGs itself (SendHeartbeat/Heartbeat, WithHeartbeat), as later 3006 releases do: a go-zeromq/zmq4
// REQ socket hands such a PING to the application as a command message.
//
// Requests are msgpack envelopes {enc, load, version}. Replies use Salt's request-channel
// dialect (use_bin_type=False: str family only, never str8 or bin) and Python's dict order.
// The order of ReqServerChannel.handle_message is kept: undecodable -> {msg: "bad load"}; not
// a map with enc and load -> "bad load"; version below WithMinimumAuthVersion -> "bad load"
// (3006.17+ with minimum_auth_version 3; the default 0 is 3006.0); enc aes -> "bad load"; a
// non-map load -> "payload and load must be a dict"; unknown cmd -> {}; missing cmd or any
// KeyError inside a command -> "Some exception handling minion payload".
//
// ClearFuncs: ping (the load echoed), publish (section 3.4 order: blacklist, check_minions,
// authentication by root key / eauth / token, authorization with ACLs whose string entries are
// regexes anchored at the start only, saltutil.find_job always allowed; auth failures reply a
// bare {error: {name, message}} and fire salt/job/<jid>/error with the whole load; no minions
// -> {jid: nil, minions: [], error}; then the events "<jid>" and salt/job/<jid>/new, the
// publication, and {enc: clear, load: {jid, minions, missing}}), runner (asynchronous {tag,
// jid}; salt/run/<jid>/new and /ret; test.arg, jobs.list_jobs, jobs.lookup_jid), wheel
// (synchronous; key.list_all; two event pairs like Salt), mk_token ("" on failure), get_token
// (false without token, {} when unknown or expired).
//
// Event bus: a unix stream socket <dir>/master_event_pub.ipc (mode 0600) and optionally TCP
// (WithEventTCP). Frames are msgpack {head: {}, body: bin(tag "\n\n" msgpack(data))} packed
// with use_bin_type=True, either back to back (FramingBare, 3006.0) or each preceded by a
// 4-byte big-endian length (FramingLengthPrefixed, 3006.26+). No replay; a reader whose
// bounded queue fills up is disconnected. A reader whose connect() returned before an event
// is fired receives that event (queued connections are accepted before every write), so
// "subscribe, then publish" is reliable in tests.
//
// Minions: AddMinion(id, handler) accepts a key. A publication runs the handler of every
// targeted online minion in its own goroutine, unless the minion saw the JID among its last
// 100 (the jid_queue, lost by RestartMinion); the return is fired as salt/job/<jid>/ret/<id>
// with {cmd: _return, id, success, return, retcode, jid, fun, fun_args, user[, out][,
// metadata], _stamp}. saltutil.find_job is answered by the minion itself from its running
// jobs. Ready handlers: Standard, TestPing, TestSleep, TestArg, StateApply/StateReturn (returns
// shaped like the captured lab returns), StateHigh, Functions, Slow, Blocking.
//
// Faults: DropNextReply, DelayNextReply, MalformNextReply, ExceptionNextReply, DropNextReturn,
// DuplicateNextReturn, CloseEventBus, SendHeartbeat, Restart, FireEvent, RestartMinion, SetMinionOnline.
// Publications and CountPublications list what was really published.
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
//     permissive_acl, no ACL argument matching ({fun: {args, kwargs}}), no keep_acl_in_token.
//   - Multi-function jobs (fun as a list), batch publishing, syndics, salt-ssh, returners.
//   - name=value arguments become string kwargs without YAML parsing.
//   - No event trimming (max_event_size), no minion/refresh events, no state_events, no
//     sub/<id>/error events of failed state.sls runs, no job-cache mutation of returns.
//   - Eauth failures are not padded to ~1 s unless WithEauthFailureDelay is set.
//   - The ROUTER has no high-water mark and no ROUTER_HANDOVER; every peer is anonymous.
//   - The event socket's mode is set right after bind (a short window where it follows umask).
package salttest
