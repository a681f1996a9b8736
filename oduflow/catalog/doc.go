// Package catalog stores custom Salt state definitions, their assignments to servers, and the immutable
// snapshots of their executions, for the custom profile of package oduflow.
//
// Three kinds of records, each carrying the company (tenant) it belongs to so that an embedding service
// can scope readers:
//
//   - Definition: a named, revisioned custom state source. Saving changed source increments the revision
//     and records the digest of the compiled source (Compile, which is profiles.CompileCustom). The
//     source can hold anything an administrator typed, so it is only ever returned by the administrative
//     API (Store).
//   - Assignment: a definition assigned to one server (minion id) of a company. Custom executions run
//     only for assigned definitions.
//   - Execution: the immutable snapshot taken when a definition is applied: execution id (= the request
//     id), company, definition id, revision, frozen source, canonical payload, digest, minion, mode
//     (apply or apply_again) and creation time. Later edits of the definition change nothing already
//     frozen. Two things are appended afterwards, never rewritten: the request ids recorded as pointing to
//     the execution (a repeated Apply that reused it), and the sanitized outcome (status, passed, total,
//     error code and what confirmed it: a minion receipt, the master's own preflight record, or an
//     operator's assertion). No raw Salt output is stored.
//
// An embedding service that lets less trusted users read assignments and execution status filters the
// records by company and drops source and payload itself (examples/controller does).
//
// FileStore is the default implementation, on the safe-store discipline of the internal safe file store: a directory
// mode 0700 owned by the service account, files 0600 written atomically (exclusive temp file, fsync,
// rename, directory fsync), create-if-absent through CreateExclusive, and a flock per record for
// updates, so several processes may share one directory. Record names:
//
//	def.<definition id>.json                 definition (mutable, locked per record)
//	nam.<sha256(company)>.<sha256(name)>.json  name index: the one definition holding a company's name
//	asg.<definition id>.<minion id>.json     assignment
//	rid.<request id>.json                    request id index: execution or pointer (create-if-absent)
//	exe.<minion id>.<request id>.json        execution snapshot (+ pointers, outcome; locked per record)
//	srv.<minion id>                          lock name serializing custom starts per server (LockServer)
//
// Several controller replicas on several hosts share one catalog in etcd instead: the Catalog method of
// package oduflow/etcdstore's Store, next to the claims, with the same semantics (both implementations
// pass the conformance suite oduflowtest.TestCatalogStore).
//
// Keep passwords and tokens out of custom sources: definitions and execution snapshots persist them here,
// and Salt itself keeps every published load in the master's job directory.
package catalog
