// Package simminion is a Go-only model of the minion module oduflow_job (protocol 1) for tests and
// benchmarks: a salttest.MinionHandler implementing oduflow_job.capabilities, oduflow_job.run and
// oduflow_job.status (plus test.ping) with in-memory receipts, configurable per-profile results, delays and
// a hold that keeps runs "running" until released. It follows the Python module's observable behaviour
// (receipt shapes, running/unknown/not_started summaries, failed 0/1 when another run holds the execution
// lock; custom runs check state_data_json {"digest","high"}, recompute the digest of high, refuse a
// mismatch before any record, and bind the digest in their receipts) but stores nothing on disk; the Python-backed minion in internal/pyhost is the real-parts path.
package simminion
