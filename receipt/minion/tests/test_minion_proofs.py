"""Receipt proofs: oduflow_job.attest signs the status answer with the minion's Salt key
through the backend salt.crypt imported. Every backend installed is exercised; with CI=true
a missing backend fails instead of skipping."""

import base64
import hashlib
import os
import unittest

from support import MINION_ID, MinionCase, host, new_jid, new_request

NONCE = "0123456789abcdef" * 4
_SHA256_PREFIX = bytes.fromhex("3031300d060960864801650304020105000420")


def _require(backend):
    if host.backend_available(backend):
        return
    msg = "crypto backend {} is not installed".format(backend)
    if os.environ.get("CI") == "true":
        raise AssertionError(msg + " (CI=true: the signing tests must run on every backend)")
    raise unittest.SkipTest(msg)


def _der_ints(data):
    """The INTEGERs of a DER SEQUENCE (PKCS#1 RSAPrivateKey), standard library only."""

    def header(pos):
        tag, length = data[pos], data[pos + 1]
        pos += 2
        if length & 0x80:
            n = length & 0x7F
            length = int.from_bytes(data[pos:pos + n], "big")
            pos += n
        return tag, length, pos

    tag, _length, pos = header(0)
    assert tag == 0x30
    out = []
    while pos < len(data) and len(out) < 3:
        tag, length, pos = header(pos)
        assert tag == 0x02
        out.append(int.from_bytes(data[pos:pos + length], "big"))
        pos += length
    return out  # version, n, e


def _public_numbers(pem_path):
    with open(pem_path, "rb") as handle:
        lines = handle.read().decode("ascii").strip().splitlines()
    assert lines[0] == "-----BEGIN RSA PRIVATE KEY-----", lines[0]
    _version, n, e = _der_ints(base64.b64decode("".join(lines[1:-1])))
    return n, e


def verify(pem_path, message, sig_b64):
    """RSASSA-PKCS1-v1_5 SHA-256 verification by integer arithmetic (no crypto library)."""
    n, e = _public_numbers(pem_path)
    k = (n.bit_length() + 7) // 8
    sig = base64.b64decode(sig_b64, validate=True)
    if len(sig) != k:
        return False
    em = pow(int.from_bytes(sig, "big"), e, n).to_bytes(k, "big")
    t = _SHA256_PREFIX + hashlib.sha256(message).digest()
    return em == b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t


def generate_key(path):
    """A 2048-bit PKCS#1 PEM key, the form Salt writes, with whichever backend is installed."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if host.backend_available("cryptography"):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    elif host.backend_available("cryptodome"):
        from Cryptodome.PublicKey import RSA

        pem = RSA.generate(2048).export_key("PEM")
    elif host.backend_available("m2crypto"):
        from M2Crypto import RSA

        pem = RSA.gen_key(2048, 65537, lambda *a: None).as_pem(cipher=None)
    else:
        raise unittest.SkipTest("no crypto library to generate a test key")
    with open(path, "wb") as handle:
        handle.write(pem)
    os.chmod(path, 0o400)


class ProofCase(MinionCase):
    backend = None

    def setUp(self):
        if self.backend is not None:
            _require(self.backend)
        host.BEHAVIOR["crypto_backend"] = self.backend or "auto"
        self.addCleanup(host.BEHAVIOR.__setitem__, "crypto_backend", "auto")
        super(ProofCase, self).setUp()
        self.key = os.path.join(self.paths["pki"], "minion.pem")
        generate_key(self.key)

        def no_sha1(*_a, **_k):
            raise AssertionError("salt.crypt.sign_message (SHA-1) must never be used")

        host.sys.modules["salt.crypt"].sign_message = no_sha1

    def attest(self, request_id, jid, profile="configure", nonce=NONCE):
        return host.call(self.mod, "attest", [request_id, jid, profile, nonce])

    def check_proof(self, proof, nonce=NONCE):
        self.assertEqual(sorted(proof), ["alg", "receipt", "sig"])
        self.assertEqual(proof["alg"], "rsa-pkcs1v15-sha256")
        msg = b"oduflow-receipt-proof-v1\n" + nonce.encode() + b"\n" + self.mod._canonical_json(proof["receipt"])
        self.assertTrue(verify(self.key, msg, proof["sig"]))
        return msg


class _Backend(object):
    def test_signs_terminal_receipt(self):
        request, jid = new_request(), new_jid()
        receipt, code = self.run_job(request, "configure", jid=jid)
        self.assertEqual((receipt["status"], code), ("succeeded", 0))
        proof, code = self.attest(request, jid)
        self.assertEqual(code, 0, proof)
        self.assertEqual(proof["receipt"], receipt)  # the nine keys, exactly as stored
        msg = self.check_proof(proof)
        # tampering: another nonce (a replay of another request's proof) or a changed field
        self.assertFalse(verify(self.key, msg.replace(NONCE.encode(), b"f" * 64), proof["sig"]))
        forged = dict(receipt, passed=receipt["passed"] - 1, status="failed")
        self.assertFalse(verify(self.key, msg[:-len(self.mod._canonical_json(receipt))]
                                + self.mod._canonical_json(forged), proof["sig"]))

    def test_signs_not_started(self):
        request, jid = new_request(), new_jid()
        proof, code = self.attest(request, jid, nonce="ab" * 16)
        self.assertEqual(code, 0, proof)
        self.assertEqual(proof["receipt"]["status"], "not_started")
        self.assertEqual(proof["receipt"]["minion_id"], MINION_ID)
        self.check_proof(proof, nonce="ab" * 16)

    def test_capabilities_advertise_proof(self):
        caps, _ = host.call(self.mod, "capabilities", [])
        self.assertEqual(caps["proof"], {"alg": "rsa-pkcs1v15-sha256", "ready": True,
                                         "backend": self.backend, "error": "", "run_return": True})

    def test_run_signs_its_terminal_receipt(self):
        """run given proof_nonce returns exactly the proof attest gives over the same nonce."""
        request, jid = new_request(), new_jid()
        proof, code = self.run_job(request, "configure", jid=jid, kwargs={"proof_nonce": NONCE})
        self.assertEqual(code, 0, proof)
        self.check_proof(proof)
        self.assertReceipt(proof["receipt"], "succeeded", 3, 3, request_id=request, jid=jid)
        attested, code = self.attest(request, jid)
        self.assertEqual(code, 0, attested)
        self.assertEqual(proof, attested)  # PKCS#1 v1.5 is deterministic: the same bytes, the same signature


class Cryptodome(_Backend, ProofCase):
    backend = "cryptodome"


class M2Crypto(_Backend, ProofCase):
    backend = "m2crypto"


class Cryptography(_Backend, ProofCase):
    backend = "cryptography"


class Deterministic(ProofCase):
    def test_backends_agree(self):
        """PKCS#1 v1.5 is deterministic: every backend signs the same bytes identically."""
        answer = {"protocol": 1, "minion_id": MINION_ID, "request_id": new_request(), "jid": new_jid(),
                  "profile": "configure", "state_digest": "", "status": "succeeded", "passed": 2, "total": 2}
        sigs = {}
        for backend in host.CRYPTO_BACKENDS:
            if not host.backend_available(backend):
                continue
            sigs[backend] = self.mod._prove(NONCE, answer, host.fake_crypt(backend))["sig"]
        if os.environ.get("CI") == "true":
            self.assertEqual(sorted(sigs), sorted(host.CRYPTO_BACKENDS))
        self.assertEqual(len(set(sigs.values())), 1, sigs)


class RunReturn(ProofCase):
    """oduflow_job.run's own signed return (proof_nonce): signed only when given a nonce and the
    receipt is terminal; a minion that cannot sign returns the receipt unsigned, never fails."""

    def test_without_nonce_the_bare_receipt(self):
        request, jid = new_request(), new_jid()
        ret, code = self.run_job(request, "configure", jid=jid)
        self.assertEqual(code, 0, ret)
        self.assertReceipt(ret, "succeeded", 3, 3, request_id=request, jid=jid)

    def test_found_and_fenced_receipts_are_signed(self):
        request, jid = new_request(), new_jid()
        first, _ = self.run_job(request, "configure", jid=jid)
        again, code = self.run_job(request, "configure", jid=jid, kwargs={"proof_nonce": "cd" * 16})
        self.assertEqual(code, 0, again)
        self.check_proof(again, nonce="cd" * 16)
        self.assertEqual(again["receipt"], first)  # the stored receipt, as attest reads it
        # a fenced publication: a token not above the mark commits a terminal fenced receipt
        fenced_req = new_request()
        ret, _ = self.run_job(new_request(), "configure", kwargs={"fence_token": 5})
        self.assertEqual(ret["status"], "succeeded", ret)
        ret, code = self.run_job(fenced_req, "configure", kwargs={"fence_token": 5, "proof_nonce": NONCE})
        self.assertEqual(code, 0, ret)
        self.check_proof(ret)
        self.assertEqual((ret["receipt"]["status"], ret["receipt"]["code"]), ("failed", "fenced"))

    def test_running_answer_is_not_signed(self):
        request, jid = new_request(), new_jid()
        store = self.mod._Store(self.receipts, create=True)
        self.addCleanup(store.close)
        lock = store.try_lock(self.mod._req_lock_name(request))  # a live worker holds the request
        self.addCleanup(self.mod._release, lock)
        ret, code = self.run_job(request, "configure", jid=jid, kwargs={"proof_nonce": NONCE})
        self.assertEqual(code, 0, ret)
        self.assertReceipt(ret, "running", 0, 0, request_id=request, jid=jid)

    def test_signing_failure_returns_the_receipt_unsigned(self):
        # (no crypto backend at all is the runtime guard's crypto check: run refuses before anything)
        for breakage in ("signing raises", "no key"):
            if breakage == "no key":
                os.chmod(self.key, 0o600)
                os.remove(self.key)
            else:
                def broken(*_a, **_k):
                    raise ValueError("backend error")

                self.mod._prove = broken  # a fresh module per test (_sign is the guard's crypto check)
            request, jid = new_request(), new_jid()
            ret, code = self.run_job(request, "configure", jid=jid, kwargs={"proof_nonce": NONCE})
            self.assertEqual(code, 0, (breakage, ret))
            self.assertReceipt(ret, "succeeded", 3, 3, request_id=request, jid=jid)
            status, _ = self.status(request, jid, "configure")
            self.assertEqual(status, ret)  # committed: attest proves it once it can sign

    def test_bad_nonce_refused_before_anything_runs(self):
        for nonce in ["", "ab" * 15 + "a", "AB" * 16, "a" * 65, 12345678901234567890123456789012, True]:
            request, jid = new_request(), new_jid()
            ret, code = self.run_job(request, "configure", jid=jid, kwargs={"proof_nonce": nonce})
            self.assertEqual(code, 1, nonce)
            self.assertIn("invalid proof nonce", ret)
            status, _ = self.status(request, jid, "configure")
            self.assertEqual(status["status"], "not_started")
        self.assertEqual(self.marker_lines(), [])


class Refusals(ProofCase):
    def test_bad_nonces(self):
        request, jid = new_request(), new_jid()
        for nonce in ["", "ab" * 15 + "a", "AB" * 16, "g" * 32, "a" * 65, 12345678901234567890123456789012,
                      None, "ab" * 16 + "\n"]:
            ret, code = self.attest(request, jid, nonce=nonce)
            self.assertEqual(code, 1, nonce)
            self.assertIn("invalid nonce", ret)

    def test_bad_binding_arguments(self):
        ret, code = self.attest("not-a-uuid", new_jid())
        self.assertEqual(code, 1)
        ret, code = self.attest(new_request(), new_jid(), profile="other")
        self.assertEqual(code, 1, ret)

    def test_no_backend(self):
        host.sys.modules["salt.crypt"] = host.fake_crypt("none")
        caps, _ = host.call(self.mod, "capabilities", [])
        self.assertFalse(caps["proof"]["ready"])
        ret, code = self.attest(new_request(), new_jid())
        self.assertEqual(code, 1)
        self.assertIn("no crypto backend", ret)

    def test_missing_key(self):
        os.chmod(self.key, 0o600)
        os.remove(self.key)
        caps, _ = host.call(self.mod, "capabilities", [])
        self.assertFalse(caps["proof"]["ready"])
        ret, code = self.attest(new_request(), new_jid())
        self.assertNotEqual(code, 0, ret)


if __name__ == "__main__":
    unittest.main()
