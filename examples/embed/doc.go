// Command embed is a minimal controller service that embeds the oduflow library behind a small
// JSON HTTP API. It shows how a service wires the pieces together:
//
//   - a salt.Client that authenticates with an eauth token: salt.NewTokenSource exchanges the
//     password for a token once and renews it before it expires, so the password is not sent
//     with every publication (or, with a key file, the master's user key);
//   - an oduflow.Dispatcher with in-process workers (a long-lived service owns its workers),
//     its claim directory, and the custom-state catalog (oduflow/catalog);
//   - log/slog for structured logs (the library never logs secrets or raw Salt returns).
//
// Roles. Administrators may edit, validate and apply custom states and start
// requests. Observers may read assignments and execution status (sanitized counts and error
// codes) within their allowed companies, but never source, never edit, never execute. A record
// of a company an observer may not read answers 404, so its existence does not leak.
//
// Identity, FOR THIS EXAMPLE ONLY: the caller's identity is taken from request headers,
//
//	X-Oduflow-User:      alice
//	X-Oduflow-Role:      admin | observer
//	X-Oduflow-Companies: acme,globex          (observers: the companies they may read)
//
// which is only safe behind an authenticating reverse proxy that sets these headers itself and
// strips them from client requests. A real service derives identity from its own
// authentication (sessions, OIDC, mTLS); the authorization rules in authz.go stay the same.
//
// Servers are the minions the service manages, each belonging to one company (a JSON file
// {"client-<uuid>": "company"} given with --servers).
//
// API (JSON):
//
//	GET  /healthz
//	POST /v1/servers/{minion}/profiles/{profile}/requests             admin: start; body {"request_id"} optional
//	GET  /v1/servers/{minion}/profiles/{profile}/requests/{request}   admin, observer: the response object
//	POST /v1/custom-states/validate                                   admin: {"source"} -> valid + digest, or 422 with code/line/column
//	POST /v1/custom-states                                            admin: {"company","name","source"} -> definition
//	GET  /v1/custom-states                                            admin: definitions; observer: without source
//	GET  /v1/custom-states/{id}                                       admin: the definition with its source
//	PUT  /v1/custom-states/{id}/source                                admin: {"source"} -> new revision when changed
//	PUT  /v1/servers/{minion}/custom-states/{id}                      admin: assign
//	GET  /v1/servers/{minion}/custom-states                           admin, observer: assignments
//	POST /v1/servers/{minion}/custom-states/{id}/apply                admin: {"request_id","again"} -> custom response
//	GET  /v1/servers/{minion}/custom-executions                       admin, observer: sanitized executions
//	GET  /v1/servers/{minion}/custom-executions/{request}             admin, observer: custom status + sanitized execution
//
// Run it next to the master as the Salt service account:
//
//	ODUFLOW_SALT_PASSWORD=... go run ./examples/embed --master tcp://127.0.0.1:4506 \
//	    --events unix:///var/run/salt/master/master_event_pub.ipc --eauth pam --user oduflow \
//	    --servers servers.json --listen 127.0.0.1:8080
package main
