// Command composecheck checks the harness's compose file and the Salt configuration it mounts
// without docker and without network: YAML syntax (duplicate keys included), the required
// services and keys, the master settings the library requires (job_cache: False,
// pillar_cache: False, no master_job_cache or ext_job_cache), the eauth ACL (only
// oduflow_job.* and test.ping on client-*), the minion id, and harness.env.
//
// Usage: go run ./examples/harness/composecheck [HARNESS_DIR]   (default examples/harness)
package main
