// Package service is the controller's HTTP service: one oduflow Dispatcher (adoption on, in-process
// workers) and the custom-state catalog behind an authenticated JSON API, with health, readiness and
// Prometheus metrics.
//
//	POST /v1/requests/{profile}/{minion}                       A     start (body {"request_id": "..."} optional)
//	GET  /v1/requests/{profile}/{minion}/{request_id}          A, O  status
//	POST /v1/requests/{minion}/{request_id}/resume             A     resume an unknown request (never republishes)
//	GET  /v1/unresolved                                        A, O  the unresolved requests of the principal's companies
//	GET  /v1/minions/{minion}/ping                             A, O  the minion's Readiness (runtime_guard_error included)
//	POST /v1/custom-states/validate                            A     compile a source, never execute it
//	POST /v1/custom-states                                     A     create a definition (revision 1)
//	GET  /v1/custom-states                                     A, O  definitions' metadata
//	GET  /v1/custom-states/{id}                                A, O  administrators: with the source; observers: metadata
//	PUT  /v1/custom-states/{id}/source                         A     a new revision when the source changed
//	PUT  /v1/minions/{minion}/custom-states/{id}               A     assign
//	GET  /v1/minions/{minion}/custom-states                    A, O  assignments
//	POST /v1/minions/{minion}/custom-states/{id}/apply         A     apply or apply again ({"request_id", "again"})
//	GET  /v1/minions/{minion}/custom-executions                A, O  executions: status, counts, error codes
//	GET  /v1/minions/{minion}/custom-executions/{request_id}   A, O  one execution and its live status
//	GET  /metrics                                              A, O  the oduflow/prom collector
//	GET  /healthz, /readyz                                     open  the process serves; a new request would be admitted
//	                                                                 (/readyz: plus the guard reasons pings saw, counted)
//
// Authentication (AuthConfig): bearer tokens whose SHA-256 a 0600 file lists with a role and companies,
// or mutual TLS whose client certificate's subject CommonName a 0600 mapping file names; without either
// Open and ConfigFromEnv refuse, unless the insecure mode on a loopback address. No principal: 401 with
// WWW-Authenticate: Bearer. A (administrator) and O (observer) act only within their companies: a
// minion's company is its binding in ODUFLOW_CLIENTS (the catalog records companies on assignments, not
// servers), a definition's is its own; outside the role or the companies: 403, before anything is read
// from the body or written. A start on an unbound client is 409 unbound_client. The route table
// (handlers.go, apiRoutes; ui.go for the console) declares each route's access: its role, whether it
// writes, and the scope of its targets ({minion}, {id}, the company a create names, or a listing);
// authorize (authz.go) enforces it before the handler runs, for the API (protect), the console
// (uiProtect) and the console's calls into the API (call), and hands the handler a grant: the checked
// targets and the companies to filter a listing by. No handler checks a role or a company. Each principal has at most
// AuthConfig.MaxInflight requests in progress (429, Retry-After). Every mutating call and every 403 and
// 429 of a principal is one audit line (WithAuditLogger) naming the target's company; refusals of callers
// without a principal are counted per source and reason each interval (one line each); never a token, a
// hash or a source. Observers never read a source digest. Bodies are strict: keys exactly the route's
// names, each once (400 otherwise). Connections and unauthenticated requests are bounded per source
// (Limits, Service.Listener). Files that carry authority are read through examples/internal/authfile.
//
// A request id's scope is its client: the service stores a caller's id under
// oduflowenv.ScopedRequestID(client, id), so an id of another company's client answers exactly as an id
// never used, and no company can make another's start fail (requestKey).
//
// The operator console (ui.go, ui_pages.go) is served under /ui/: server-rendered pages whose actions
// call the routes' own handlers (so they are authorized, bounded and audited exactly as the API's),
// embedded assets and a Content-Security-Policy without inline script. A browser signs in with a token
// (POST /ui/login) and holds a session cookie (HttpOnly, SameSite=Strict, Secure under TLS; it expires
// and is revoked on sign-out and when the token file changes), or presents a client certificate. Every
// POST under /ui/ carries the page's CSRF token (403 otherwise). The session cookie authenticates GETs of
// the API too (the pages' event streams), never a write.
//
// A start answers the Response JSON with 201 when this call created the claim and 200 when the request
// already had one (a retried POST never publishes again). Every error is one JSON object
//
//	{"error": "one line", "code": "usage", "exit_status": 2, "reason": "invalid_input"}
//
// whose code and exit_status are oduflowctl's exit statuses (the same decision: 2 and 3 mean nothing
// was written, 5 means never start a replacement), and whose reason names the refusal or the library's
// error; error texts name no file. The service is configured by the same ODUFLOW_* variables as
// oduflowctl (package oduflowenv) plus those of Config and AuthConfig.
package service
