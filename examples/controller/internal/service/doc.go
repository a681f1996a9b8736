// Package service is the controller's HTTP service: one oduflow Dispatcher (adoption on, in-process
// workers) behind a JSON API, with health, readiness and Prometheus metrics.
//
//	POST /v1/requests/{profile}/{minion}                 start (body {"request_id": "..."} optional)
//	GET  /v1/requests/{profile}/{minion}/{request_id}    status
//	POST /v1/requests/{minion}/{request_id}/resume       resume an unknown request (never republishes)
//	GET  /v1/unresolved                                  every unresolved request across clients
//	GET  /healthz                                        the process serves
//	GET  /readyz                                         a new request would be admitted (Dispatcher.Ready)
//	GET  /metrics                                        the oduflow/prom collector
//
// A start answers the Response JSON with 201 when this call created the claim and 200 when the request
// already had one (a retried POST never publishes again). Every error is one JSON object
//
//	{"error": "one line", "code": "usage", "exit_status": 2, "reason": "invalid_input"}
//
// whose code and exit_status are oduflowctl's exit statuses (the same decision: 2 and 3 mean nothing
// was written, 5 means never start a replacement), and whose reason names the library's error. The
// service is configured by the same ODUFLOW_* variables as oduflowctl (package oduflowenv) plus
// ODUFLOW_LISTEN and ODUFLOW_DRAIN_TIMEOUT (Config).
package service
