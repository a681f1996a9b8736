// Package pyhost runs the real oduflow_job minion module (receipt.MinionModule().Source) outside
// Salt, in a standard-library Python process (receipt.MinionModule().TestHost), so that Go tests and
// the demo exercise the module's actual receipts, locks and durable files.
//
// Start writes the module and the host into a directory and starts `python3 host.py`. The
// host speaks JSON lines on stdin/stdout and forks one process per request, like a Salt
// minion with multiprocessing: True, so the module's flock-based locks are exercised across
// processes. One host serves any number of minion ids; each gets its own receipt
// directory, state cache directory and side-effect marker file under <dir>/minions/<id>/.
//
// The host's fake Salt presents a verified Salt version (3006.0 by default) with matching
// signatures of the functions the module shims; its state.apply returns fixture results
// (roles.client_stack 3/3 true, roles.client_production 2/3, the other roles all true) and
// appends one marker line per real execution. Handler adapts a Host to the Salt master
// simulator (salt/salttest) so that a simulated minion runs the module for
// oduflow_job.* functions.
//
// Python 3.6 or newer is required; tests skip when python3 is not installed.
package pyhost
