// Package oduflowenv reads the ODUFLOW_* environment shared by the example programs (the oduflowctl CLI and
// the HTTP controller) and builds their connections from it: the Salt client (user key or eauth token), the
// claim store (a directory, or etcd with its credentials and TLS files) and the state directory.
//
// Both programs read exactly the same variables with the same validation and the same messages:
//
//	ODUFLOW_SALT_MASTER    master request port, tcp://host:port
//	ODUFLOW_SALT_EVENTS    master event bus, unix:///…/master_event_pub.ipc or tcp://host:port
//	ODUFLOW_SALT_KEY_FILE  master user key file (preferred), else
//	ODUFLOW_SALT_EAUTH, ODUFLOW_SALT_USER, ODUFLOW_SALT_PASSWORD  eauth, exchanged once for a token
//	ODUFLOW_SALT_PKI_DIR   the master's pki_dir (receipt proofs verify against minions/<id>)
//	ODUFLOW_STATE_DIR      claim store directory (default DefaultStateDir); worker.log with etcd claims
//	ODUFLOW_CLAIMS         file:DIR, DIR or etcd://HOST:PORT[,HOST:PORT...]/PREFIX (etcds:// for TLS)
//	ODUFLOW_ETCD_USER, ODUFLOW_ETCD_PASSWORD, ODUFLOW_ETCD_CACERT, ODUFLOW_ETCD_CERT, ODUFLOW_ETCD_KEY
//	ODUFLOW_CATALOG_DIR    the custom-state catalog's directory (oduflowctl)
//	ODUFLOW_PROFILES       the profile table file (Settings.Table; unset: the seeds' table)
//
// Every error it returns is an *Error whose Kind is ErrUsage (bad input or configuration, nothing
// written), ErrUnreachable (a claim store that does not answer) or ErrRefused (credentials refused), so
// that each program maps it to its own exit status or HTTP answer. Messages name the setting and the
// expected form, never a password.
package oduflowenv
