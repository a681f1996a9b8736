// Package internal holds leaf helpers that are not part of the public API: the safe file store and its
// locks (safefile), strict JSON (strictjson), standard-library-visible error marks (errmark), receipt
// proof signing and verification (receiptproof), retry backoff (backoff), the salt Client's request
// trace (salttrace), child-process helpers of the tests (testproc) and the exported-name check
// (apisurface). None of them imports the dispatcher; the benchmark programs live in the nested module
// bench/.
package internal
