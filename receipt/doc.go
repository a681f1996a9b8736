// Package receipt implements protocol 1 of oduflow: the durable minion receipt
// that lets a completed Salt state result be read back exactly after a lost
// publication, never guessed and never re-executed.
//
// It owns:
//
//   - identities: ValidateMinionID ("client-" + canonical lowercase UUID),
//     ValidateRequestID, NewRequestID, ValidateJID (exactly 20 ASCII digits),
//     all refusing with ErrInvalidID;
//   - the receipt schema (exactly nine keys: protocol, minion_id, request_id,
//     jid, profile, state_digest, status, passed, total), its strict decoding
//     (Decode for JSON text, FromValue for a decoded Salt return) and its
//     canonical encoding (Receipt.Encode);
//   - Reduce: a Salt state return -> status/passed/total, nothing else;
//   - CanonicalJSON (RFC 8785 JCS) and Digest, which bind custom payloads;
//   - Binding.Check, the immutable binding of a receipt to its claim;
//   - MinionModule: the embedded oduflow_job minion module and its bootstrap
//     assets.
//
// # Refusals
//
// Every refused receipt is an *InvalidReceiptError (errors.Is
// ErrInvalidReceipt) whose Reason is one short machine word. The schema
// reasons are shared with the Python module (testdata/receipt-cases.json) and
// never change; Field names the offending key when there is one. Values from
// the candidate are never echoed.
//
//	reason          field        meaning
//	--------------  -----------  ----------------------------------------------------------
//	bad_json        -            not parseable JSON, trailing data, invalid UTF-8
//	duplicate_key   the key      the same key twice in one JSON object
//	unknown_key     -            a key outside the nine
//	missing_key     the key      one of the nine keys absent
//	wrong_type      the key      not an object, a string for an int, true or 1.0 for an int
//	bad_protocol    protocol     an integer other than 1
//	bad_minion_id   minion_id    not "client-" + canonical lowercase UUID
//	bad_request_id  request_id   not a canonical lowercase UUID
//	bad_jid         jid          not exactly 20 ASCII digits
//	bad_profile     profile      not one of the five profiles
//	bad_status      status       not one of the five statuses
//	bad_digest      state_digest custom without a 64-hex digest, or a fixed profile with one
//	counts          passed/total negative, beyond 2^53-2, passed > total, or inconsistent with status
//	binding         the field    a valid receipt for another claim (Binding.Check)
//
// Receipt proofs (below) are refused by the dispatcher with its own reasons:
// malformed (not {receipt, alg, sig} with a strict receipt and base64 sig),
// alg (another algorithm), key (no key or an RSA key under 2048 bits) and
// signature (wrong key, other nonce, changed receipt).
//
// It imports nothing from the rest of the module, knows nothing of ZeroMQ or
// the dispatcher, and does no logging.
//
// # Minion receipt state machine
//
// One request on a minion goes through these phases (the package's tests model
// the minion worker against this table); the master's claim phases are the
// dispatcher's and are not modelled here.
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
// Any pair not listed as legal is illegal.
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
// ("rsa-pkcs1v15-sha256") and "sig": the RSA PKCS#1 v1.5 signature over SHA-256 of the message
// "oduflow-receipt-proof-v1\n" + nonce + "\n" + the receipt's canonical JSON, made with the minion's own Salt key pair
// (pki_dir/minion.pem, loaded by salt.crypt.get_rsa_key and signed through the crypto backend salt.crypt
// imported on that minion: M2Crypto, Cryptodome or cryptography; never salt.crypt.sign_message, which
// uses SHA-1). The prefix keeps a proof from being any other message the key signs; the nonce (32 to 64
// lowercase hex digits, fresh per request) keeps a proof from being replayed for another request or poll.
// The dispatcher checks it with the standard library against the public key it trusts for that
// minion (a key of at least 2048 bits), then checks the binding (Binding.Check).
//
// A lying party on the master bus (any authenticated minion can fire any tag) can copy, replay and invent
// receipts, but it cannot make a proof verify under another minion's key, nor reuse one under another
// nonce. The module needs no new dependency: it signs with the library Salt already loaded. What the
// signing minion itself reports is still only its word: the proof authenticates the minion, not the
// truth of the state run.
package receipt
