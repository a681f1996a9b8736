// Package internal holds helpers that are not part of the public API: the Salt master
// simulator used by tests and the demo, the host that runs the real Python minion module
// outside Salt, and Go-only simulated minions for benchmarks.
package internal
