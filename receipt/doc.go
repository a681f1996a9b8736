// Package receipt implements protocol 1 of oduflow: the durable minion receipt
// that lets a completed Salt state result be read back exactly after a lost
// publication, never guessed and never re-executed.
//
// It owns:
//
//   - identities: ValidateMinionID ("client-" + canonical lowercase UUID),
//     ValidateRequestID, NewRequestID, ValidateJID (exactly 20 ASCII digits);
//   - the receipt schema (exactly nine keys: protocol, minion_id, request_id,
//     jid, profile, state_digest, status, passed, total), its strict decoding
//     (Decode, FromValue: every defect an *InvalidReceiptError with a short
//     Reason word shared with the Python module) and canonical encoding;
//   - Reduce: a Salt state return -> status/passed/total, nothing else;
//   - CanonicalJSON (RFC 8785 JCS) and Digest, which bind custom payloads;
//   - Binding.Check, the immutable binding of a receipt to its claim;
//   - receipt proofs (Proof, ProofFromValue, VerifyProof, ProofMessage, ValidateNonce, NewNonce,
//     SignProof for test minions): the minion's signature over a nonce and the receipt;
//   - the minion receipt state machine (Phase, checkTransition).
//
// It imports nothing from the rest of the module, knows nothing of ZeroMQ or
// the dispatcher, and does no logging.
//
// # Minion receipt state machine
//
// One request on a minion goes through these phases (Phase); the master's
// claim phases are the dispatcher's and are not modelled here.
//
//	from       to         trustworthy   legal   why
//	---------  ---------  ------------  ------  ----------------------------------------------
//	(none)     claimed    any           yes     run() commits the JID index (first write)
//	claimed    running    any           yes     run() commits the running record (second write)
//	claimed    unknown    any           yes     partial claim: the worker died between the writes
//	running    terminal   any           yes     reduction done, terminal receipt committed
//	running    unknown    any           yes     worker died during state work (its lock died too)
//	unknown    terminal   true          yes     the exact, bound terminal receipt was obtained
//	unknown    terminal   false         no      a guess or untrusted return never resolves unknown
//	claimed    terminal   any           no      no state work may run without the running record
//	claimed    claimed    any           no      a second claim would be a second execution
//	running    running    any           no      a second worker for the same request
//	running    claimed    any           no      phases never go back
//	unknown    claimed    any           no      unknown is never replayed
//	unknown    running    any           no      unknown is never replayed
//	terminal   *          any           no      a terminal receipt is immutable
//	*          (none)     any           no      evidence is never deleted by a transition
//
// Any pair not listed as legal is illegal (errIllegalTransition).
//
// How a status answer is derived from evidence (no record -> not_started;
// JID index or running record with the request lock held -> running; with
// the lock free -> unknown; terminal receipt -> the exact receipt) has one
// race to avoid: a worker can start or finish between reading the records
// and probing the lock. The safe order is: read the records, probe the lock,
// read the records again, and decide on the second reading; partial evidence
// counts as abandoned (unknown) only when the same partial evidence was
// already there before a probe that found the lock free (a finishing worker
// commits its terminal receipt before it releases the lock, so it cannot be
// mistaken for a dead one). If the evidence moved, read again; evidence that
// keeps moving belongs to a live worker (running). The Go model of the minion
// worker in worker_test.go does exactly this under concurrent polls.
//
// # Receipt statuses
//
// A committed receipt carries succeeded or failed. The same nine-key shape is
// the answer of status(), which may also carry running, unknown or
// not_started; those carry passed = total = 0. See Receipt for the count and
// digest rules and Decode for the precedence of reasons.
//
// # Receipt proofs and threat model
//
// The receipt says what happened; a proof says who says so. oduflow_job.attest(request_id, jid, profile,
// nonce) answers the same nine-key receipt status gives (unchanged protocol 1), with "alg"
// (ProofAlg, rsa-pkcs1v15-sha256) and "sig": the RSA PKCS#1 v1.5 signature over SHA-256 of ProofMessage =
// ProofPrefix + nonce + "\n" + the receipt's canonical JSON, made with the minion's own Salt key pair
// (pki_dir/minion.pem, loaded by salt.crypt.get_rsa_key and signed through the crypto backend salt.crypt
// imported on that minion: M2Crypto, Cryptodome or cryptography; never salt.crypt.sign_message, which
// uses SHA-1). The prefix keeps a proof from being any other message the key signs; the nonce (32 to 64
// lowercase hex digits, fresh per request) keeps a proof from being replayed for another request or poll.
// VerifyProof checks it with the standard library against the public key the caller trusts for that
// minion; it does not check the binding (Binding.Check does).
//
// A lying party on the master bus (any authenticated minion can fire any tag) can copy, replay and invent
// receipts, but it cannot make a proof verify under another minion's key, nor reuse one under another
// nonce. The module needs no new dependency: it signs with the library Salt already loaded. What the
// signing minion itself reports is still only its word: the proof authenticates the minion, not the
// truth of the state run.
package receipt
