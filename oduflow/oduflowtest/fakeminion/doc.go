// Package fakeminion holds fake protocol-1 minions for tests of code built on package oduflow: they answer
// the oduflow_job functions (capabilities, run, status, attest) behind the fake Salt master of package
// salt/salttest, so a service can test its controller end to end over real sockets, signed receipt
// proofs included.
//
// Two kinds are provided, with the same observable behaviour:
//
//   - Model (NewModel) is a Go-only model of the module: in-memory receipts, a result per profile
//     (WithResult; default succeeded 1/1), delays, and a hold that keeps runs "running" until Release.
//     It follows the Python module's observable behaviour (receipt shapes, running/unknown/not_started
//     summaries, failed 0/1 when another run holds the execution lock; custom runs check
//     state_data_json {"digest","high"}, recompute the digest of high, refuse a mismatch before any
//     record, and bind the digest in their receipts) and signs its attest answers with its own key, and
//     its terminal run returns when the run carries proof_nonce, as the module does (WithoutRunProof
//     models a module before that, WithUnsignedRunReturn one that cannot sign at run time), but
//     stores nothing on disk. Runs counts the state runs it actually started. It enforces fencing exactly
//     as the module does (capability fencing version 1: fence_token on run, oduflow_job.fence, fenced
//     receipts, the high-water mark; WithFenceTokenRequired is the module's switch flipped,
//     WithoutFencing a module from before it) and counts runs in flight at once past the fence check
//     (MaxConcurrentRuns), so dispatcher tests can assert that no two runs overlapped on one client.
//   - PythonHost (StartPython) runs the real module (receipt.MinionModule) outside Salt, in a
//     standard-library Python process (receipt.MinionTestHost) that speaks JSON lines on stdin/stdout
//     and forks one process per request, like a Salt minion with multiprocessing: True, so the module's
//     flock-based locks, receipts and durable files are exercised across processes. One host serves any
//     number of minion ids; each gets its own receipt directory, state cache directory, Salt key and
//     side-effect marker file under <dir>/minions/<id>/. Its fake Salt presents a Salt version (3006.0 by
//     default) and the internals the module's runtime guard checks (signatures, the event bus reached only
//     from State.event, the publication JID injected, a job process of its own); state.apply returns fixture results (roles.client_stack 3/3 true,
//     roles.client_production 2/3, the other roles all true; PythonConfig changes them) and appends one
//     marker line per real execution (Marker). Python 3.6 or newer is required; StartPython fails with
//     ErrPythonMissing when the interpreter is not found, so tests can skip.
//
// Add and AddPython register a minion on a salttest.Master with its key accepted, so the dispatcher's
// pinned-key check (oduflow.WithPKIDir(master.PKIDir())) verifies the proofs it signs.
//
// This is a separate package from oduflowtest because package oduflow's own in-package tests use these
// minions: oduflowtest imports oduflow (its ClaimStore suite is written against oduflow's types), so a
// minion in oduflowtest would be an import cycle for them. This package imports only receipt,
// receipt/proof, salt/salttest and the internal error marks, never oduflow.
package fakeminion
