// Package oduflowgo is the root of oduflow-go, a Go library that drives SaltStack 3006
// natively: it speaks the master's own request protocol (ZeroMQ + msgpack on the
// ret_port, 4506) and reads results from the master's event bus, with no salt-api and no
// Python on the controller.
//
// The root package holds no code; the library is these packages, and imports point one
// way, down this list (salt and receipt import no other public package; profiles imports
// receipt; oduflow imports salt, receipt, profiles and catalog; nothing points back up):
//
//   - [github.com/oduflow/oduflow-go/salt]: the wire. A clear-channel client (publish with a
//     preassigned JID, runner, wheel, mk_token/get_token, ping) with user-key, eauth and
//     token authentication, and a reader of the master event bus that reconnects by itself
//     and reports every gap. A publish is never retried: a lost reply is an
//     outcome-unknown error, distinct from "definitely not sent".
//   - [github.com/oduflow/oduflow-go/receipt]: protocol 1, shared with the minion module
//     oduflow_job (Python, embedded in this module). Identities, receipts, the reduction of
//     a Salt state return to succeeded/failed/unknown with counts, RFC 8785 canonical JSON
//     and SHA-256 digests, and the binding check.
//   - [github.com/oduflow/oduflow-go/profiles]: the fixed profile -> role table
//     (configure, production, volume_resize, credentials) and custom Salt states:
//     validation of plain YAML, compilation to high data, and the digest that binds it.
//   - [github.com/oduflow/oduflow-go/oduflow]: the controller API. An at-most-once
//     Dispatcher: a request is claimed durably before anything is published, published at
//     most once with its preassigned JID, and its status (not_started, running, succeeded,
//     failed, unknown) stays honest when the return is lost, the worker dies or the master
//     restarts. Unknown dispatches quarantine their client until an operator reconciles.
//     Claims live in a file store by default; [github.com/oduflow/oduflow-go/oduflow/catalog]
//     keeps custom state definitions, assignments and execution snapshots, and
//     [github.com/oduflow/oduflow-go/oduflow/etcdstore] keeps claims, leases and the catalog
//     in etcd for several controller replicas.
//   - For tests of code built on these: [github.com/oduflow/oduflow-go/salt/salttest], a
//     fake Salt master on real sockets; [github.com/oduflow/oduflow-go/oduflow/oduflowtest],
//     the conformance suite of claim stores and an in-memory store; and
//     [github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion], protocol-1 minions (a
//     Go model, or the real Python module hosted outside Salt);
//     [github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv], the two with Dispatchers on
//     them, for tests of services and Hooks adapters.
//   - examples/oduflowctl: a CLI (including a self-contained demo against the fake
//     master); examples/controller: a deployable controller service (authenticated HTTP API);
//     examples/harness: how to run the integration tests against a real salt-master.
//
// Under internal/ are leaf helpers no caller can import: the durable file discipline
// (internal/safefile: 0700/0600, no symlinks, atomic writes, flock locks) under the file
// claim store and the catalog, strict JSON, receipt proofs, backoff and error marks.
//
// Security in one paragraph: run next to the master as the Salt service account; prefer the
// user key or eauth tokens over passwords, because a rejected eauth publish makes the
// master fire the whole request, password included, on its event bus
// (salt/job/<jid>/error), and Salt keeps every published load in its job directory even
// with job_cache: False. The library itself persists only sanitized receipts: identities,
// JID, profile, digest, status and counts.
package oduflowgo
