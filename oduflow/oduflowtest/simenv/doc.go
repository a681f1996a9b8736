// Package simenv runs the Salt master simulator (salt/salttest) on real sockets with fake protocol-1
// minions (oduflowtest/fakeminion) and Dispatchers on it: the test bench of code that embeds a
// Dispatcher, such as a controller service or a Hooks adapter (the oduflow/prom and oduflow/otel
// modules test against it).
//
// Everything is torn down by the test's Cleanup: the simulator, every Client and every Dispatcher
// (closed with a 5 s drain). The Dispatchers use short Timers (Timers), so a test that goes wrong ends
// in seconds, a claim directory of their own, and the simulator's pki directory, so the proofs the fake
// minions sign are verified against their accepted keys.
//
// A test's own timeouts: Client takes salt options (salt.WithRequestTimeout(300*time.Millisecond) makes a
// lost reply cost 300 ms instead of the 60 s default) and DispatcherOn builds the Dispatcher on it. Faults
// are armed on Master by the function they hit: Master().DropNextReply("oduflow_job.run") loses the reply
// of the run's publication (a plain "publish" would hit the preflight oduflow_job.capabilities first).
// TestLostPublishReply in this package is such a test, whole, in under a second.
//
// WaitFinal stops at the first final status, unknown included; an unknown request can still become
// succeeded or failed when a verified receipt arrives later. WaitVerified waits for succeeded or failed.
//
// EmitRequestEvents calls a Hooks value with the events of one dispatched request in the order a worker
// emits them, for benchmarks of adapters without a dispatcher in the loop.
package simenv
