// Command oduflowctl dispatches and follows Salt jobs through the oduflow library from a
// shell, and shows the whole flow with no setup: `go run ./examples/oduflowctl demo`.
//
//	oduflowctl [global flags] COMMAND [flags] [args]
//
// Global flags (each also read from the environment variable in brackets):
//
//	--master     ODUFLOW_SALT_MASTER    the master's request port, tcp://127.0.0.1:4506
//	--events     ODUFLOW_SALT_EVENTS    the master event bus, unix:///…/master_event_pub.ipc or tcp://127.0.0.1:4512
//	--key-file   ODUFLOW_SALT_KEY_FILE  the master's .<user>_key file (user-key auth; preferred)
//	--eauth      ODUFLOW_SALT_EAUTH     eauth backend (token auth; the password comes only from
//	--user       ODUFLOW_SALT_USER      ODUFLOW_SALT_PASSWORD and is exchanged for a token once)
//	--state-dir  ODUFLOW_STATE_DIR      the claim store (default /var/cache/salt/oduflow-apply)
//	--pki-dir    ODUFLOW_SALT_PKI_DIR   the master's pki_dir (default /etc/salt/pki/master): receipt
//	                                    proofs verify against minions/<id>, the key the master accepted
//	--output     ODUFLOW_OUTPUT         json or text (default text on a terminal, json otherwise)
//
// Commands: ping, start, status, resume, reconcile, custom (validate, digest, start, status),
// run (any function on any target, like salt, naming every minion that did not return; its own
// exit statuses: 0, 1 some failed, 5 some did not return), events, module, demo. Every command has --help. Exit status: 0 success or terminal
// succeeded, 1 terminal failed or unknown, 2 bad input, 3 cannot reach the master.
//
// start runs the request in a detached worker process (this same binary, re-executed), so the
// request goes on after the command exits; a later status reports its outcome.
package main
