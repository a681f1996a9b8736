// Package salt is a native Go client for a Salt 3006 master: the clear
// request channel (ZeroMQ, master ret_port 4506) and the master event bus. It
// needs neither Python nor salt-api.
//
// # Requests
//
// A Client sends one command per fresh ZMTP connection, encoded as Salt's own
// Python client encodes it (msgpack, old str family only, insertion-ordered
// maps), inside the envelope {enc: "clear", load, version: 3}:
//
//	c, _ := salt.NewClient("tcp://127.0.0.1:4506",
//		salt.WithAuth(salt.UserKey("root", "/var/cache/salt/master/.root_key")))
//	res, err := c.Publish(ctx, salt.PublishRequest{
//		Target: salt.ListTarget("web1"), Fun: "test.ping", JID: jids.Next()})
//
// Commands: Publish (list, glob, compound and other targets; positional args;
// keyword args as a trailing {"__kwarg__": true, ...} map; a preassigned JID),
// Runner (asynchronous: the result comes on the event bus), Wheel
// (synchronous), MkToken, GetToken and the unauthenticated Ping probe.
//
// # At most once
//
// Publish is never retried. Salt's publish has no request id and the master
// keeps processing a request whose client has gone, so an unanswered publish
// may have been executed, or may still be. Errors fall in two groups:
// IsNotPublished(err) (ErrNotSent: nothing left this process; or a reply that
// proves refusal: ErrAuthentication, ErrAuthorization, ErrNoMinions,
// ErrBadLoad, ErrMasterException, other *MasterError) and
// IsOutcomeUnknown(err) (ErrOutcomeUnknown: timeout, cancellation, lost
// connection, unreadable or oversized reply after the request was sent, or
// an acknowledgement that does not match the request:
// another JID than the preassigned one, or minions and missing of a list
// target that are not exactly the target). Refusals are classified first.
// A context cancelled while a request is in flight closes its connection.
//
// # Authentication
//
// UserKey checks the master's .<user>_key file for every request (the master
// writes a new key at every start; the key read last is reused only while an
// lstat finds the very same, settled file), refusing symlinks, non-regular files,
// group-write/other permission bits and any content that is not a Salt user
// key (76 base64 characters of 56 bytes, one optional trailing newline): a
// wrong path is refused (ErrKeyFile, ErrNotSent) before a byte is sent. Eauth sends backend, username and
// password with every request. TokenAuth sends a token; NewTokenSource logs in
// once with mk_token and renews before expiry.
//
// Security: clear-channel requests and replies are neither encrypted nor
// signed; use them on loopback or a trusted network. When the master rejects
// an eauth publish (wrong password, function outside the ACL) it fires the
// WHOLE request, password included, on its event bus as salt/job/<jid>/error
// (salt/job/error without a JID), and every bus reader sees it. Prefer tokens
// (NewTokenSource) over Eauth, and never log events with error tags. This
// package never logs or returns credentials in errors; tokens print redacted.
//
// # Event bus
//
// Job returns never come back over ZeroMQ: they are fired on the master's
// local event bus as salt/job/<jid>/ret/<minion>. SubscribeEvents reads it
// (unix socket master_event_pub.ipc, or TCP 4512 with ipc_mode: tcp) and must
// be called before publishing, because the bus has no replay. Each connection
// detects its framing from its first byte: bare msgpack maps (3006.0) or a
// 4-byte big-endian length before each map (3006.26+). Frames are size
// capped; the stream reconnects with backoff; a bounded buffer holds events
// for a slow consumer, and every disconnect, reconnect, overflow or
// undecodable event is reported as a Gap event, after which a consumer must
// poll for what it may have missed (Gap.Err tells the cause when it was an
// error). salt/job/<jid>/new, salt/job/<jid>/publish (3007+) and
// salt/job/<jid>/ret/<id> are decoded into JobNew, JobPublish and JobReturn;
// only the last is a return. A tag "cluster/event/<peer>/<tag>" (3007+
// cluster mode) is delivered as <tag> with Event.Peer set, and the tag
// filter sees <tag>.
//
// Permissions: the unix socket belongs to the master's user. Salt 3006
// creates it 0660 when external_auth or publisher_acl is configured (its
// group may read it), else 0600; Salt 3007.8 and the 3008 line create it 0660
// whatever the configuration (seen live; a 2025-03 development snapshot made
// it 0600). A refusal is an
// *EventBusPermissionError (errors.Is(err, ErrEventBusPermission)) naming the
// socket's mode and owner and what to do: run as the master's user, or set
// ipc_mode: tcp on the master and subscribe on loopback.
//
// Every byte of the bus is hostile: any authenticated minion can fire any
// event with any tag. A frame that has started must complete within
// WithFrameTimeout (an idle bus is never timed out); the tag is read and
// filtered before the data is decoded; the data is decoded within
// Limits (values, estimated allocated bytes, depth), charged before
// anything is allocated, so an event of empty arrays cannot cost 40 times its
// size; the queue for a slow consumer counts each event's frame plus that
// estimate. With the defaults, frames at the cap grow the process by at most
// 64 MiB (memory_budget_test.go measures it). Replies get the same budgets
// (WithLimits on NewClient).
//
// The event bus has no handshake: SubscribeEvents returns when connect()
// does, and the master registers the reader when its publisher process
// accepts the connection, normally within milliseconds. Events fired in
// between are lost without a Gap. A dispatcher that must not miss a return
// therefore also polls the minion when a return is overdue.
//
// # Wire details
//
// Requests use a minimal ZMTP 3.1 REQ implementation (zmtp.go explains why
// go-zeromq/zmq4's REQ socket is not used): PING heartbeats of later 3006
// masters are answered with PONG and never taken for a reply, and reply size
// is capped before allocation. Replies and events are decoded tolerantly
// by one decoder: non-UTF-8 strings, integer map keys, ext 78 datetimes, ext
// 79 constants, nil and bin values. Ext types are handled per call; nothing is
// registered globally. JIDGenerator makes 20-digit UTC JIDs that are strictly
// increasing within one generator.
//
// # Salt generations
//
// One code base serves Salt 3006 and the later lines. Seen live on 3006.0,
// 3006.16, 3007.8 and the 3008 line (master of 2025-09), and on a 2025-03
// development snapshot reporting 3009.0: the request wire (publish by key,
// eauth and token, runner, wheel, the typed refusals, envelope versions 0-4)
// is the same; from 3007 the event bus comes from the transport's publisher
// (same frames), its unix socket is 0660, it fires salt/job/<jid>/publish on
// every publish (testdata/vectors/eventbus_3009 holds one, captured), and one
// bus reader that stops reading blocks the publisher for every reader:
// returns stop arriving while the connection stays open. The library reports
// that as a "bus stalled" Gap (ErrBusStalled) when ExpectEvents was told to
// expect events. From release notes only, in no source run here (so never
// called supported): 3006.17+/3007.9+ minimum_auth_version (the default
// envelope version 3 passes it), 3006.26+ length-prefixed event frames. From
// source, not run live: 3007 cluster mode
// (cluster/event/<peer>/ tags, __peer_id), 3008 worker pools routing
// requests by cmd. salttest.WithGeneration simulates either generation.
//
// # Structure
//
// One package, a file per concept, on three floors and a base. Files call
// their own floor, the floors below and the base, never a floor above:
//
//	API        client.go          Client, NewClient, Close; one request: envelope, send, reply errors
//	           publish.go         Target, PublishRequest, Publish and the acknowledgement check
//	           commands.go        Runner, Wheel, Ping
//	           auth.go            Auth, Eauth, TokenAuth, CheckAuth; how credentials enter a load
//	           userkey.go         UserKey and the key format (keyfile_unix.go reads and caches
//	                              the file; keyfile_other.go refuses on other systems)
//	           token.go           Token, MkToken, GetToken, RenewingTokenSource
//	           events.go          SubscribeEvents, EventStream: connect, read, filter, reconnect
//	           options.go         ClientOption, EventOption, CommonOption, TokenOption and every With... option
//	           redact.go          how every value holding a secret prints (redacted)
//	plumbing   transport.go       one request, one reply: a fresh connection or a proven idle one
//	           eventframe.go      event bus framing: bare or length-prefixed frames, size caps
//	           eventdecode.go     one frame to one Event: fast single pass, reference fallback
//	           eventqueue.go      the bounded queue between the bus reader and its consumer
//	wire       zmtp.go            the ZMTP 3.1 REQ peer: handshake, one reply, PING/PONG
//	           msgpack_encode.go  requests in Salt's request dialect (orderedMap keeps key order)
//	           msgpack_decode.go  replies and event data, tolerantly, within this package's limits
//	                              (the bytes themselves: internal/saltwire, shared with salttest)
//	base       errors.go          every sentinel, MasterError, IsNotPublished, IsOutcomeUnknown
//	           limits.go          Limits; the decode budget every decoder charges
//	           jid.go             JID, ParseJID, JIDGenerator
//	           eventtypes.go      Event, Gap, JobNew, JobPublish, JobReturn; cluster tags
//	           eventperm.go       EventBusPermissionError: the socket's mode and owner
//	                              (eventperm_unix.go reads them; eventperm_other.go cannot)
//
// A request: Publish (publish.go) builds its load with the credentials
// (auth.go); Client.do (client.go) wraps it in the envelope and encodes it
// (msgpack_encode.go); roundTrip or pooledRoundTrip (transport.go) carries it
// over ZMTP (zmtp.go); the reply is decoded (msgpack_decode.go), classified
// (client.go, errors.go) and checked against the request (publish.go). An
// event: the EventStream (events.go) reads a frame (eventframe.go), decodes it
// (eventdecode.go) into an Event (eventtypes.go) and queues it (eventqueue.go)
// for the consumer. Of this module, salt imports only the internal leaf
// helpers backoff, errmark, salttrace and saltwire (the wire, written once for
// this client and the simulator);
// salt/salttest, the master simulator, is imported by this package's tests
// only.
package salt
