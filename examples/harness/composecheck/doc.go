// Command composecheck checks the harness's compose file and the Salt configuration it mounts
// without containers and without network: YAML syntax (duplicate keys included), the required
// services and keys, the master settings the library requires (job_cache: False,
// pillar_cache: False, no master_job_cache or ext_job_cache), the eauth ACL (only
// oduflow_job.* and test.ping on client-*), the minion id, the master's published request port
// (on 127.0.0.1, never a port of the Salt labs that run beside the harness), and harness.env:
// its variables, and that its master port, event bus and root key are the ones compose.yaml
// publishes and bind-mounts.
//
// Usage: go run ./examples/harness/composecheck [HARNESS_DIR]   (default examples/harness)
package main
