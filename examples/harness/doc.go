// Package harness holds the real-master integration harness: a compose file that starts a
// Salt 3006 master and minion with the oduflow_job module synced (compose.yaml), the
// environment file the integration tests read (harness.env), run-integration.sh, which runs
// every environment-gated integration test against whatever master ODUFLOW_SALT_* names, and
// check-compose.sh, which CI uses to check the compose file without docker. See README.md.
//
// The package itself holds no code; composecheck is the checker that check-compose.sh runs.
package harness
