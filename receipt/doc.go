// Package receipt implements protocol 1 of oduflow: the durable minion receipt
// that lets a completed Salt state result be read back exactly after a lost
// publication, never guessed and never re-executed.
//
// It owns:
//
//   - identities: ValidateMinionID (the id policy: an ASCII letter or digit,
//     then up to 127 of letters, digits, '.', '_', '-', no "..", not ending in
//     ".lock"; any Salt
//     minion id that names one minion and is one path component),
//     ValidateSeedMinionID ("client-" + canonical lowercase UUID, the seeds'
//     policy), ValidateRequestID, NewRequestID, ValidateJID (exactly 20 ASCII
//     digits), all refusing with ErrInvalidID;
//   - the receipt schema (exactly nine keys: protocol, minion_id, request_id,
//     jid, profile, state_digest, status, passed, total; plus the optional
//     code of a fenced receipt, see Fencing below), its strict decoding
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
//	unknown_key     -            a key outside the nine and the optional code
//	missing_key     the key      one of the nine keys absent
//	wrong_type      the key      not an object, a string for an int, true or 1.0 for an int
//	bad_protocol    protocol     an integer other than 1
//	bad_minion_id   minion_id    not an id of the id policy (ValidateMinionID)
//	bad_request_id  request_id   not a canonical lowercase UUID
//	bad_jid         jid          not exactly 20 ASCII digits
//	bad_profile     profile      not a profile name ([a-z][a-z0-9_]{0,31}: the seeds' five, a table's)
//	bad_status      status       not one of the five statuses
//	bad_code        code         present but not "fenced", or on a status other than failed
//	bad_digest      state_digest custom without a 64-hex digest, or a fixed profile with one
//	counts          passed/total negative, beyond 2^53-2, passed > total, or inconsistent with status
//	                             (failed 0/0 only with code fenced)
//	binding         the field    a valid receipt for another claim (Binding.Check)
//
// Receipt proofs (below) are refused by the dispatcher with its own reasons:
// malformed (not {receipt, alg, sig} with a strict receipt and base64 sig),
// alg (another algorithm), key (no key or an RSA key under 2048 bits) and
// signature (wrong key, other nonce, changed receipt).
//
// It imports nothing from the rest of the module but the internal error marks
// (internal/errmark), knows nothing of ZeroMQ or the dispatcher, and does no
// logging.
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
// Any pair not listed as legal is illegal. The table is that of a publication
// that does state work. One that never does (a fenced publication, or one
// refused because another apply holds the execution lock) goes from claimed
// straight to a terminal receipt that says nothing ran (fenced 0/0, or failed
// 0/1) with no running record, since no state work follows.
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
// mistaken for a dead one). The execution lock (one apply per minion) is
// released when the state work ends, before that commit: a dispatcher that
// reads the terminal receipt from status and starts the next request at once
// never finds the minion busy. If the evidence moved, read again; evidence that
// keeps moving belongs to a live worker (running). The Go model of the minion
// worker in worker_test.go does exactly this under concurrent polls.
//
// # Fencing (capability "fencing", version 1)
//
// A lease cannot stop a dispatcher process that pauses after its check and
// publishes later; the minion can. The contract between dispatcher and
// oduflow_job:
//
//	oduflow_job.run(request_id, profile, state_data_json="", fence_token=N)
//	oduflow_job.fence(request_id, jid, profile, token)
//
// A fence token is an integer from 1 to 2^53-1 (exact in JSON and msgpack
// doubles), strictly increasing per client (the minion), issued by the claim
// store at the dispatch intent and published as the keyword argument
// fence_token ({"__kwarg__": true, "fence_token": N} in the publication's
// arguments). A bool, a float or a string is refused.
//
// The minion keeps, per client, the highest token it has started or fenced:
// fence.json in its receipt directory, exactly {"minion_id": <its id>,
// "protocol": 1, "record": "fence", "token": N} in canonical JSON, under the
// receipt store's rules (exclusive temporary file, fsync, rename, directory
// fsync, mode 0600, owner-only, no symlinks, one link, at most 64 KiB). A
// malformed record, one of another minion or an unsafe file is a store error
// ("receipt store unresolved: malformed fence record (fence.json)", retcode
// 1): nothing is written, nothing runs, and it is never replaced.
//
// run with a token, in order: the request lock; evidence of this same
// publication answers first (a redelivery gets its receipt, never a fenced
// one); then, under the index lock, a token not above the mark commits the
// JID index and a terminal fenced receipt and returns it (no state work);
// otherwise the execution lock is taken, the raised mark and then the JID
// index are committed (both fsynced) before the running record and any state
// work. A minion busy with another apply answers failed 0/1 as before and does
// not raise the mark (nothing started).
//
// fence raises the mark to at least token first, always. Then, with the
// request lock: a terminal receipt of that publication is answered unchanged;
// evidence of a started run answers unknown (its worker is gone); a live worker
// holding the request lock is answered as status answers (running, or its
// terminal receipt if it finishes meanwhile); no evidence commits the JID
// index and a terminal fenced receipt, so that publication never runs.
// Idempotent, serialized with run and status by the same locks. profile is
// part of the call because the receipt binds it (as in status and attest).
//
// A fenced receipt is the nine keys plus "code": "fenced" (Receipt.Code,
// CodeFenced), status failed, passed = total = 0; state_digest is the
// payload's digest when run refused a custom payload, "" when fence() fenced
// it (which then matches any digest in Binding.Check: it says nothing ran).
// attest signs it like any receipt; the proof covers the code. Receipts without
// a code keep exactly the nine keys, so earlier receipts decode unchanged.
//
// capabilities() reports "fencing": {"version": 1, "ready": <runtime guard
// holds>, "token_required": <not the legacy mode>, "mark": <the mark>}. A run
// without fence_token fails closed: it is refused before any state work unless
// the operator set the minion option oduflow_allow_unfenced_runs: True (the
// legacy mode, token_required false, for dispatchers that predate fencing); even
// then it runs only while the minion has no mark (once it has one, a run
// without a token is fenced like a stale token), and an untrusted fence record
// refuses it. The dispatcher requires the fencing capability (version 1, ready)
// for new requests and always sends a token.
//
// # Runtime guard
//
// run refuses ("refusing to run unprotected: <check>: <reason>", retcode 1,
// nothing written) unless every check holds, on any Salt from 3006.0 on; the
// checks test what Salt does, not which version it reports: salt_version
// (3006.0 or later, agreeing with the grains), multiprocessing (the job runs
// alone in its process: ProcessPayload(jid=<its JID>) or salt-call, main
// thread), state_functions (state.sls/apply/high parameters; state.apply and
// state.high reach salt.utils.files through the patched module), state_event
// (State.event's parameters; the only code in salt.state that reaches the
// event bus is inside State.event; no subclass overrides it), call_parallel
// (likewise for process creation), state_cache_writes (sls writes its caches
// only through salt.utils.files.fopen, and the shim turns a probe write into
// memory), pub_jid (load_args_and_kwargs gives run the publication's JID as
// __pub_jid over a caller's) and crypto (salt.crypt's backend signs a
// known-answer RSA PKCS#1 v1.5 SHA-256 probe that verifies by integer
// arithmetic). capabilities() lists them (runtime_guard_checks) and reports
// runtime_guard and runtime_guard_error.
//
// # Receipt statuses
//
// A committed receipt carries succeeded or failed (a fenced receipt is failed
// with code fenced). The same nine-key shape is
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
// A module whose capabilities report "proof": {..., "run_return": true} also takes a proof_nonce
// keyword on oduflow_job.run (the dispatcher's fresh nonce for that publication) and returns a
// terminal receipt signed over it in exactly attest's form ({"receipt", "alg", "sig"}, the same
// message): the dispatcher verifies it the same way and needs no attest call. Running and unknown
// answers, and a receipt the minion cannot sign, come back bare. Modules without the capability
// refuse the keyword, so it is sent only to those that advertise it.
//
// A lying party on the master bus (any authenticated minion can fire any tag) can copy, replay and invent
// receipts, but it cannot make a proof verify under another minion's key, nor reuse one under another
// nonce. The module needs no new dependency: it signs with the library Salt already loaded. What the
// signing minion itself reports is still only its word: the proof authenticates the minion, not the
// truth of the state run.
package receipt
