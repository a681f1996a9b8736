// Package internal holds helpers that are not part of the public API. Each is a leaf: it
// imports no public package of this module (their tests may), so the public packages can
// use them without an import running back up.
//
//   - safefile: the durable file discipline under the file claim store, the custom catalog
//     and the receipt tests (safe opens, atomic and exclusive writes, flock and OFD locks);
//   - saltwire: Salt's wire, written once for the client (salt) and the simulator (salt/salttest):
//     ZMTP 3.1 framing and Salt's two msgpack dialects, with the decode budget;
//   - hostclock: this host's boot id and CLOCK_BOOTTIME as a stamp a claim carries (the file claim
//     store's status windows; package claims checks the stamps' form);
//   - filestorehook: the file claim store's configuration (filestore.Option is a func of its Config)
//     and test hooks (crash points, a host clock a test moves), which no caller outside the module
//     can build;
//   - strictjson: one JSON value, no duplicate keys, before encoding/json decodes a record;
//   - errmark: sentinels that both errors.Is of the standard library and cockroachdb see, and the
//     one-line public form of every returned error (OneLine, Boundary: no stack in any slog handler);
//   - backoff: the one reconnect backoff of the module;
//   - salttrace: the per-request phase trace the salt client stamps for the benchmarks;
//   - testproc: the test binary as a child process, for crash and lock tests (a child parks until it
//     is killed, is stopped with SIGSTOP and waited for, or starts with a group released together);
//   - testwait: the tests' one poll, for a state nothing announces (CONTRIBUTING.md: how a test waits);
//   - benchsource: the 64 KiB custom-state source the benchmarks compile;
//   - apisurface: a test that holds every public package to its API budget.
//
// The benchmark programs are not here: they are main packages, in the nested module bench/.
package internal
