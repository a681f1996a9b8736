// Package benchsim is the simulated Salt master (salt/salttest) of the benchmark programs, in two forms:
// in this process (StartInProcess, for rows that measure a dispatcher against it at low load), and as
// the held-minion child process of the in-flight rows (benchrun inflight, etcdbench inflight): a master in
// its own process with n simulated minions that hold every oduflow_job.run until the child quits, so the
// n requests stay in flight on the measured dispatcher, and one minion that answers test.ping at once
// (the target of the simulator's own publish-rate anchor). The parent starts the child with Start; the
// program registers Serve as its sub-command SubCommand.
package benchsim
