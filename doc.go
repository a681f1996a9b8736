// Package oduflowgo is the root of oduflow-go, a Go library that drives SaltStack (3006.0 and later)
// natively: it speaks the master's own request protocol (ZeroMQ + msgpack on the ret_port, 4506) and
// reads results from the master's event bus, with no salt-api and no Python on the controller.
//
// The root package holds no code. Imports point one way: internal helpers at the bottom, then salt and
// receipt (which import no other public package), profiles and receipt/proof (which import receipt), the
// catalog, the dispatcher oduflow (which imports salt, receipt, receipt/proof, profiles and catalog), and
// the stores, adapters and test kits on top; nothing points back up.
//
// The library, in this module:
//
//   - [github.com/oduflow/oduflow-go/salt]: the wire: a clear-channel client (publish with a preassigned
//     JID, runner, wheel, mk_token/get_token, ping; user-key, eauth and token authentication) and a reader
//     of the master event bus that reconnects by itself and reports every gap; a publish is never retried,
//     and a lost reply is an outcome-unknown error, distinct from "definitely not sent".
//   - [github.com/oduflow/oduflow-go/salt/saltcmd]: a general Salt client on that wire: any function on
//     any target, every return streamed, every minion that did not return named with its state.
//   - [github.com/oduflow/oduflow-go/receipt]: protocol 1, shared with the minion module oduflow_job
//     (Python, embedded in this module): identities, receipts, their reduction, canonical JSON, digests.
//   - [github.com/oduflow/oduflow-go/receipt/proof]: the receipt proof: the minion's signature over the
//     dispatcher's nonce, and its verification.
//   - [github.com/oduflow/oduflow-go/profiles]: the fixed profile -> role table (configure, production,
//     volume_resize, credentials) and custom Salt states
//     (validation of plain YAML, compilation to high data, the digest that binds it).
//   - [github.com/oduflow/oduflow-go/oduflow]: the controller API, an at-most-once Dispatcher with
//     durable claims, honest statuses, quarantine and reconciliation; claims in a file store by default.
//   - [github.com/oduflow/oduflow-go/oduflow/catalog]: custom state definitions, assignments and
//     execution snapshots.
//
// For tests of code built on these:
//
//   - [github.com/oduflow/oduflow-go/salt/salttest]: a fake Salt master on real sockets.
//   - [github.com/oduflow/oduflow-go/oduflow/oduflowtest]: the claim-store and catalog conformance
//     suites and an in-memory store.
//   - [github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion]: protocol-1 minions (a Go model,
//     or the real Python module hosted outside Salt).
//   - [github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv]: the two with Dispatchers on them, for
//     tests of services and Hooks adapters.
//
// Nested modules, each with its own go.mod so that its dependencies stay out of this one's graph:
//
//   - github.com/oduflow/oduflow-go/oduflow/etcdstore: claims, leases and the catalog on etcd, for
//     controller replicas on several hosts.
//   - github.com/oduflow/oduflow-go/oduflow/etcdstore/etcdtest: the etcd store's tests against real
//     embedded etcd servers.
//   - github.com/oduflow/oduflow-go/oduflow/prom: the dispatcher's Hooks as a Prometheus collector.
//   - github.com/oduflow/oduflow-go/oduflow/otel: the dispatcher's Hooks as OpenTelemetry spans and
//     instruments.
//   - github.com/oduflow/oduflow-go/examples: examples/oduflowctl, a CLI with a self-contained demo
//     against the fake master; examples/harness, the integration tests against a real salt-master.
//   - github.com/oduflow/oduflow-go/examples/controller: a deployable controller service (an
//     authenticated HTTP API).
//   - github.com/oduflow/oduflow-go/bench: the benchmark programs.
//
// Under internal/ are leaf helpers no caller can import: the durable file discipline (internal/safefile:
// 0700/0600, no symlinks, atomic writes, flock and OFD locks) under the file claim store and the catalog,
// strict JSON, error marks, backoff, the publish trace of the benchmarks, test child processes and the
// API budget test.
//
// Security in one paragraph: run next to the master as the Salt service account; prefer the user key or
// eauth tokens over passwords, because a rejected eauth publish makes the master fire the whole request,
// password included, on its event bus (salt/job/<jid>/error), and Salt keeps every published load in its
// job directory even with job_cache: False. The library itself persists only sanitized receipts:
// identities, JID, profile, digest, status and counts. docs/ARCHITECTURE.md has the threat model.
package oduflowgo
