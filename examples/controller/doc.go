// Command controller is a deployable HTTP controller service for the oduflow dispatcher: one Dispatcher
// per process (adoption on, in-process workers) behind the JSON API of package service, configured by the
// same ODUFLOW_* variables as oduflowctl plus
//
//	ODUFLOW_LISTEN         host:port to listen on (default 127.0.0.1:8080); refused before anything starts
//	                       when malformed
//	ODUFLOW_DRAIN_TIMEOUT  how long a SIGTERM or SIGINT drain may take (default 25s)
//	ODUFLOW_LOG_FORMAT     text (default) or json, on stderr; ODUFLOW_DEBUG=1 logs at debug level
//	ODUFLOW_AUTH_TOKENS    bearer tokens: lines NAME ROLE COMPANY[,COMPANY...] SHA256HEX, mode 0600
//	ODUFLOW_TLS_CERT, ODUFLOW_TLS_KEY
//	                       serve HTTPS
//	ODUFLOW_TLS_CLIENT_CA, ODUFLOW_TLS_PRINCIPALS
//	                       require client certificates of this CA; the principal is the certificate's
//	                       subject CommonName, given a role and companies by the mapping (mode 0600)
//	ODUFLOW_CLIENTS        lines MINION COMPANY: each client's company (MINION of the table's id policy)
//	ODUFLOW_PROFILES       the profile table (profiles.LoadTable; unset: the seeds' table)
//	ODUFLOW_CATALOG_DIR, ODUFLOW_MAX_INFLIGHT_PER_PRINCIPAL, ODUFLOW_INSECURE_NO_AUTH (loopback only)
//
// Without tokens or client certificates it refuses to start (exit 2). The audit trail is JSON lines on
// stderr ("logger":"audit").
//
// Replicas share the claim store (ODUFLOW_CLAIMS=etcd://…/PREFIX across hosts). On SIGTERM or SIGINT a
// replica stops accepting connections, answers the requests it has, then drains its Dispatcher within
// ODUFLOW_DRAIN_TIMEOUT: what is still running then is released, and any replica (this one restarted, or
// another) adopts it and follows it through the minion's receipt, never publishing it again. It exits 0
// after a drain, 2 on a configuration error, 3 when the claim store does not answer, 4 when it refuses the
// credentials (oduflowctl's exit statuses). See README.md.
package main
