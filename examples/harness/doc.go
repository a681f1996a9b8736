// Package harness holds the real-master integration harness: a Containerfile and
// build-images.sh that build a Salt 3006.0 master and minion image with podman from a Debian
// base made here and a Salt source tree given at build time, a compose file that starts the
// master and one minion with the oduflow_job module synced (compose.yaml), the environment
// file the integration tests read (harness.env), run-integration.sh, which runs the tests
// against the containers (--compose: up, the whole suite, down) or against whatever master
// ODUFLOW_SALT_* names, compose-kit.sh, which stops and restarts the containers for the
// disruptive live steps, and check-compose.sh, which CI uses to check the compose file
// without containers. See README.md.
//
// The package itself holds no code; composecheck is the checker that check-compose.sh runs.
package harness
