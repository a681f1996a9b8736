# -*- coding: utf-8 -*-
"""
oduflow_job: protocol 1 of Oduflow's durable minion receipts (Salt execution module).

Functions (all other names are private):

    oduflow_job.capabilities()
    oduflow_job.run(request_id, profile, state_data_json="", fence_token=None, profile_table=None,
                    proof_nonce=None)
    oduflow_job.status(request_id, jid, profile)
    oduflow_job.attest(request_id, jid, profile, nonce)
    oduflow_job.fence(request_id, jid, profile, token)

``run`` executes one managed apply for one request, bound to the publication's own JID
(read only from Salt's ``__pub_jid`` metadata), and commits a durable receipt before
returning it to Salt:

    {"protocol": 1, "minion_id": "<this minion's id>", "request_id": "<uuid>",
     "jid": "<20 digits>", "profile": "configure", "state_digest": "",
     "status": "succeeded", "passed": 60, "total": 60}

The profiles are those of this minion's profile table, the config key ``oduflow_profiles``
(without it the seeds' table: configure -> roles.client_stack, ...; see _parse_table): a
profile runs its sls list through ``state.apply a,b``, or the highstate (``state.apply`` with
no argument); a profile the table does not hold is refused. ``profile_table`` is the
dispatcher's table digest (sent with any table other than the seeds'): it must be this table's.
``custom`` runs canonical high data through ``state.high``, bound by the SHA-256 of its RFC
8785 canonical JSON. The argument ``state_data_json`` is "" for table profiles and, for
custom, the JSON object text ``{"digest": "<sha256 hex>", "high": <high data>}``. The minion's
own id must be within its table's id policy (seeds: client-<uuid>; salt: any Salt minion id
of letters, digits, '.', '_', '-', no "..").

``status`` answers from local evidence only: the exact terminal receipt, ``running`` while a
live worker holds the request lock, ``unknown`` for a partial claim or a dead worker,
``not_started`` when there is no evidence (which never authorizes a new publication).

``attest`` gives the same answer as ``status``, signed: ``{"receipt": <answer>, "alg":
"rsa-pkcs1v15-sha256", "sig": "<base64>"}``. The signature is RSA PKCS#1 v1.5 over SHA-256 of
``b"oduflow-receipt-proof-v1\n" + nonce + b"\n" + canonical JSON of the answer``, made with
this minion's own Salt key (``pki_dir/minion.pem``), loaded by ``salt.crypt.get_rsa_key`` and
signed through the crypto backend ``salt.crypt`` itself imported (M2Crypto, Cryptodome/Crypto
or cryptography). The master verifies it with the key it has accepted for this minion id,
so a return put on the event bus by anyone else is never evidence. ``nonce`` is 32 to 64
lowercase hex digits chosen by the master for each request (a proof never replays).

``run`` given ``proof_nonce`` (capability ``"proof": {"run_return": true}``) returns its
terminal receipt in that same signed form, over the publication's own nonce, so a dispatched
request needs no attest job; a run that cannot sign, or whose answer is not terminal, returns
the bare receipt. A module without the capability refuses the keyword (it refuses every
caller option it does not know): the dispatcher sends it only to minions that advertise it.

Fencing (capability ``fencing``, version 1): ``fence_token`` is an integer from 1 to 2^53-1,
strictly increasing per client (this minion), issued by the dispatcher's claim store. The
module keeps the highest token it has started or fenced in ``fence.json`` (the high-water
mark) and commits the raised mark, then the JID index, before any state work. A run whose
token is not above the mark runs nothing and commits a terminal fenced receipt: the nine
keys plus ``"code": "fenced"``, status ``failed``, 0 of 0. ``fence`` raises the mark to at
least ``token`` and makes that publication never-to-run (a fenced receipt), or, if its run
already started or finished, answers its receipt (running, unknown or terminal) unchanged.
A run without ``fence_token`` is refused before any state work (``a fence token is
required``), unless the operator sets the minion option ``oduflow_allow_unfenced_runs: True``
(the legacy mode, for the dispatchers of earlier releases that send no token): then it runs
only while this minion has never seen a token (no fence record); once it has a mark it
commits a fenced receipt exactly as a stale token does, and a fence record that is
malformed, of another minion or too open refuses it as it refuses a run with a token.

Receipts live in ``/var/lib/oduflow/job-receipts`` (minion option ``oduflow_receipt_dir``),
a directory owned by the minion user with mode 0700; files are 0600. Opens refuse
symlinks in any path component, foreign owners, group/other permission bits and files with
more than one link. Writes are exclusive temporary file + fsync + rename + directory fsync.
A malformed or inaccessible record is an error and is never replaced.

Store layout (plain names in the receipt directory):

    jid-<jid>.json          JID index: the request this publication is bound to
    fence.json              fence high-water mark: {"minion_id", "protocol", "record": "fence", "token"}
    req-<request_id>.json   running record, replaced atomically by the terminal receipt
    req-<request_id>.lock   request lock (flock, held by the live worker)
    exec.lock               execution lock (flock, one managed apply per minion)
    index.lock              short lock around check-and-create of a JID index

Why flock: an flock is released by the kernel when its holder dies (SIGKILL included), so a
free request lock next to a running record proves that the worker is gone, while a held
one proves that it is alive. A file that merely exists proves nothing.

Raw results never reach disk or the event bus from inside ``run``: the state cache files
(``sls.p``, ``*.cache.p`` such as the highstate's ``highstate.cache.p``) are written into
memory, reads through that cache path are
refused, ``State.event`` is silenced and ``State.call_parallel`` refuses to spawn. The
runtime guard (``_GUARD_CHECKS``) verifies, on any Salt from 3006.0 on, what the shims rely
on: the signatures of the patched and called functions (each one of the forms it has had in
Salt's releases, ``runtime_guard_forms`` names the one found), that salt.state reaches the event
bus only from ``State.event`` and starts processes only from ``State.call_parallel``, that
the state cache writes go through ``salt.utils.files.fopen`` and the shim turns a probe
write into memory, that ``load_args_and_kwargs`` injects the publication's ``__pub_jid``,
that the job runs alone in its process (``multiprocessing: True``), and that the crypto
backend signs a known-answer probe correctly. Any failure: ``runtime_guard: false`` with
``<check>: <reason>`` in ``capabilities``, and ``run`` refuses before doing anything.
There is no bypass.

Compatible with Python 3.6+ and the standard library only (the signature uses the crypto
library Salt already loaded; the module imports none of its own).
"""

import base64
import errno
import fcntl
import hashlib
import importlib
import inspect
import io
import json
import logging
import math
import os
import re
import stat
import time

try:  # pragma: no cover - depends on the runtime
    from salt.exceptions import CommandExecutionError
except ImportError:  # pragma: no cover

    class CommandExecutionError(Exception):
        """Stand-in when Salt is not importable."""


log = logging.getLogger(__name__)

__virtualname__ = "oduflow_job"

PROTOCOL = 1

_DEFAULT_RECEIPT_DIR = "/var/lib/oduflow/job-receipts"

# Fencing (capability "fencing", version 1). A run without fence_token is refused unless the
# minion option below is True (the legacy mode, set by the operator for dispatchers that
# predate fencing); even then only while the minion has no fence mark (see _claim).
_FENCING_VERSION = 1
_ALLOW_UNFENCED_OPTION = "oduflow_allow_unfenced_runs"
_MAX_FENCE_TOKEN = 2 ** 53 - 1  # exact in JSON and in a double, like the counts
_FENCE_NAME = "fence.json"

_ROLES = {
    "configure": "roles.client_stack",
    "production": "roles.client_production",
    "volume_resize": "roles.client_storage_resize",
    "credentials": "roles.client_credentials",
}
_PROFILES = ("configure", "production", "volume_resize", "credentials", "custom")

# Profile tables: the minion config key oduflow_profiles holds the operator's table, the same
# document the dispatcher reads (profiles.LoadTable), normalized as
#   {"minion_ids": "seeds"|"salt", "profiles": {name: {"sls": [..]} | {"highstate": true}}}
# Without the key the minion holds the seeds' table (_ROLES, minion_ids seeds) and capabilities
# answers exactly as before tables. The table's digest is the SHA-256 of its canonical JSON (RFC
# 8785, as custom states), which the dispatcher compares with its own before it publishes.
_TABLE_KEY = "oduflow_profiles"
_PROFILE_NAME_RE = re.compile(r"\A[a-z][a-z0-9_]{0,31}\Z")
_SLS_RE = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)*\Z")
_MAX_SLS_LEN = 200
_MAX_TABLE_PROFILES = 64
_MAX_PROFILE_SLS = 32
_ID_POLICIES = ("seeds", "salt")
_STATUSES = ("not_started", "running", "succeeded", "failed", "unknown")
_RECEIPT_KEYS = (
    "protocol",
    "minion_id",
    "request_id",
    "jid",
    "profile",
    "state_digest",
    "status",
    "passed",
    "total",
)
_INT_KEYS = ("protocol", "passed", "total")
# The one optional receipt key: "code" says why a failed receipt ran nothing. Only "fenced"
# exists (failed 0/0: a fence token not above the minion's high-water mark, or a fence()
# call before the run); receipts without it keep the nine keys of every earlier version.
_CODE_KEY = "code"
_CODE_FENCED = "fenced"
_CODES = (_CODE_FENCED,)
_RECORD_KEYS = ("record", "protocol", "minion_id", "request_id", "jid", "profile", "state_digest")

_UUID_RE = re.compile(r"\A[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_JID_RE = re.compile(r"\A[0-9]{20}\Z")
_DIGEST_RE = re.compile(r"\A[0-9a-f]{64}\Z")
# The id policy (minion_ids: salt): what Salt's list matcher targets as exactly one minion and
# what is one safe path component: a letter or digit, then letters, digits, '.', '_', '-', at most
# 128 in all, no "..", not ending in ".lock" (the stores' lock files). Every client-<uuid> is one.
_MINION_ID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")

_MAX_COUNT = 2 ** 53 - 1
_MAX_SAFE_INTEGER = 2 ** 53
_MAX_DEPTH = 512
_MAX_RECORD_BYTES = 64 * 1024
_MAX_STATE_DATA_BYTES = 1024 * 1024
_MAX_STATE_IDS = 100
_VALUE_TRIMMED = "VALUE_TRIMMED"
_REQUEST_LOCK_PATIENCE = 2.0  # seconds a new worker retries a request lock held by a poll
_REPLACED_RETRIES = 5  # reopens of a file seen with no link (renamed over meanwhile)
_REPLACED_PAUSE = 0.001  # seconds between those reopens
_STATUS_READS = 5  # read-probe-read rounds before moving evidence is called running
_PROOF_ALG = "rsa-pkcs1v15-sha256"
_PROOF_PREFIX = b"oduflow-receipt-proof-v1\n"  # domain separation: this key signs nothing else like it
_NONCE_RE = re.compile(r"\A[0-9a-f]{32,64}\Z")

def __virtual__():
    return __virtualname__


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


class _Refused(CommandExecutionError):
    """A request this module refuses before any state work (nothing was executed)."""


class _StoreError(CommandExecutionError):
    """The receipt store is unsafe, inaccessible or holds a malformed record: unresolved."""

    def __init__(self, reason, name=""):
        self.reason = reason
        self.name = name
        msg = "oduflow_job: receipt store unresolved: {}".format(reason)
        if name:
            msg += " ({})".format(name)
        super(_StoreError, self).__init__(msg)


class _BindingConflict(CommandExecutionError):
    """Local evidence binds this request or JID to something else."""

    def __init__(self, field):
        self.field = field
        super(_BindingConflict, self).__init__(
            "oduflow_job: binding conflict on {}".format(field)
        )


class _NotCanonical(ValueError):
    pass


class _ParallelRefused(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------
# Identities
# ---------------------------------------------------------------------------------------


def _is_uuid(value):
    return isinstance(value, str) and bool(_UUID_RE.match(value))


def _is_minion_id(value):
    """The id policy: any id a receipt may carry (client-<uuid> or a Salt host name)."""
    return (isinstance(value, str) and bool(_MINION_ID_RE.match(value)) and ".." not in value
            and not value.endswith(".lock"))


def _is_seed_minion_id(value):
    return isinstance(value, str) and value.startswith("client-") and _is_uuid(value[7:])


def _is_profile(value):
    """A profile name a receipt may carry: custom or a table's name ([a-z][a-z0-9_]{0,31})."""
    return isinstance(value, str) and bool(_PROFILE_NAME_RE.match(value))


class _TableError(Exception):
    """The minion's oduflow_profiles is not a valid table (the reason names a field, never a value)."""


def _parse_table(value):
    """The normalized table document of a config value, or _TableError."""
    if not isinstance(value, dict):
        raise _TableError("not a mapping")
    if any(not isinstance(k, str) for k in value) or not set(value) <= {"profiles", "minion_ids"}:
        raise _TableError("unknown key (want profiles, minion_ids)")
    ids = value.get("minion_ids", "seeds")
    if not isinstance(ids, str) or ids not in _ID_POLICIES:
        raise _TableError("minion_ids: must be seeds or salt")
    profiles = value.get("profiles")
    if not isinstance(profiles, dict) or not profiles:
        raise _TableError("profiles: must be a mapping of 1 to 64 profiles")
    if len(profiles) > _MAX_TABLE_PROFILES:
        raise _TableError("profiles: more than 64 profiles")
    out = {}
    for name, entry in profiles.items():
        if name == "custom":
            raise _TableError("profiles.custom: custom is reserved")
        if not _is_profile(name):
            raise _TableError("profiles: a profile name does not match [a-z][a-z0-9_]{0,31}")
        field = "profiles." + name
        if not isinstance(entry, dict) or not entry or any(k not in ("sls", "highstate") for k in entry):
            raise _TableError(field + ": must be {sls: [...]} or {highstate: true}")
        if "sls" in entry and "highstate" in entry:
            raise _TableError(field + ": sls and highstate are exclusive")
        if "highstate" in entry:
            if entry["highstate"] is not True:
                raise _TableError(field + ".highstate: must be true")
            out[name] = {"highstate": True}
            continue
        sls = entry["sls"]
        if not isinstance(sls, list) or not 1 <= len(sls) <= _MAX_PROFILE_SLS:
            raise _TableError(field + ".sls: must be a list of 1 to 32 sls names")
        for item in sls:
            if not isinstance(item, str) or len(item) > _MAX_SLS_LEN or not _SLS_RE.match(item):
                raise _TableError(field + ".sls: not a Salt sls name")
        if len(set(sls)) != len(sls):
            raise _TableError(field + ".sls: an sls listed twice")
        out[name] = {"sls": list(sls)}
    return {"minion_ids": ids, "profiles": out}


_SEEDS_TABLE = {"minion_ids": "seeds", "profiles": {p: {"sls": [r]} for p, r in _ROLES.items()}}


def _table():
    """(table, digest, configured): the minion's profile table from its config key (the seeds'
    without it). A key that is not a valid table raises _TableError."""
    opts = _opts()
    try:
        configured = _TABLE_KEY in opts
    except Exception:  # pylint: disable=broad-except
        configured = False
    table = _parse_table(opts.get(_TABLE_KEY)) if configured else _SEEDS_TABLE
    return table, _digest(table), configured


def _own_minion_id(minion_id):
    """This minion's id is within its table's id policy (a table that does not read: no)."""
    try:
        return _own_id_ok(minion_id, _table()[0])
    except _TableError:
        return False


def _holds_profile(profile):
    """custom, or a profile of this minion's table (a table that does not read: none)."""
    if profile == "custom":
        return True
    try:
        return isinstance(profile, str) and profile in _table()[0]["profiles"]
    except _TableError:
        return False


def _own_id_ok(minion_id, table):
    if table["minion_ids"] == "salt":
        return _is_minion_id(minion_id)
    return _is_seed_minion_id(minion_id)


def _is_jid(value):
    return isinstance(value, str) and bool(_JID_RE.match(value))


def _is_digest(value):
    return isinstance(value, str) and bool(_DIGEST_RE.match(value))


# ---------------------------------------------------------------------------------------
# Canonical JSON (RFC 8785) and digests
# ---------------------------------------------------------------------------------------


def _jcs_number(value):
    if isinstance(value, int):
        if value > _MAX_SAFE_INTEGER or value < -_MAX_SAFE_INTEGER:
            raise _NotCanonical("integer beyond +-2^53")
        return str(value)
    if math.isnan(value) or math.isinf(value):
        raise _NotCanonical("NaN or infinity")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    text = repr(abs(value))  # shortest round-tripping digits
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    if "." in mantissa:
        int_part, frac = mantissa.split(".")
    else:
        int_part, frac = mantissa, ""
    digits = int_part + frac
    point = len(int_part) + exponent
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-")
        out += str(abs(e))
    return sign + out


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _jcs_string(value):
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _NotCanonical("invalid UTF-8 in string")
    out = ['"']
    for ch in value:
        esc = _SHORT_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch < " ":
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _jcs(value, depth, out):
    if depth > _MAX_DEPTH:
        raise _NotCanonical("nesting too deep")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_jcs_string(value))
    elif isinstance(value, (int, float)):
        out.append(_jcs_number(value))
    elif isinstance(value, dict):
        keys = list(value.keys())
        for key in keys:
            if not isinstance(key, str):
                raise _NotCanonical("non-string object key")
            _jcs_string(key)
        keys.sort(key=lambda k: k.encode("utf-16-be"))
        out.append("{")
        for i, key in enumerate(keys):
            if i:
                out.append(",")
            out.append(_jcs_string(key))
            out.append(":")
            _jcs(value[key], depth + 1, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _jcs(item, depth + 1, out)
        out.append("]")
    else:
        raise _NotCanonical("unsupported type " + type(value).__name__)


def _canonical_json(value):
    """RFC 8785 canonical JSON of a JSON-like value, as UTF-8 bytes."""
    out = []
    _jcs(value, 0, out)
    return "".join(out).encode("utf-8")


def _digest(value):
    return hashlib.sha256(_canonical_json(value)).hexdigest()


# ---------------------------------------------------------------------------------------
# Strict JSON parsing
# ---------------------------------------------------------------------------------------


class _Pairs(list):
    """Top-level object members in order, so duplicate keys stay visible."""


def _pairs_hook(pairs):
    return _Pairs(pairs)


def _reject_constant(name):
    raise ValueError("non-standard JSON constant")


def _to_plain(value):
    if isinstance(value, _Pairs):
        return {k: _to_plain(v) for k, v in value}  # later duplicates win, as in Go
    if isinstance(value, list):
        return [_to_plain(v) for v in value]
    return value


def _loads_strict(data):
    """Parse JSON text (bytes or str) strictly. Returns the top-level value with objects as
    _Pairs (top level only) or raises ValueError."""
    if isinstance(data, bytes):
        data = data.decode("utf-8")  # strict: invalid UTF-8 raises ValueError
    value = json.loads(data, object_pairs_hook=_pairs_hook, parse_constant=_reject_constant)
    if isinstance(value, _Pairs):
        return _Pairs((k, _to_plain(v)) for k, v in value)
    return _to_plain(value)


def _decode_receipt(data):
    """Decode and validate a receipt from JSON text. Returns (receipt_dict, None) or
    (None, reason), with the reasons and precedence of the Go receipt.Decode."""
    try:
        value = _loads_strict(data)
    except (ValueError, RecursionError):
        return None, "bad_json"
    if not isinstance(value, _Pairs):
        return None, "wrong_type"
    seen = {}
    for key, val in value:
        if key in seen:
            return None, "duplicate_key"
        seen[key] = val
    return _receipt_from_value(seen)


def _receipt_from_value(value):
    """Validate a decoded receipt mapping. Returns (receipt_dict, None) or (None, reason)."""
    if not isinstance(value, dict):
        return None, "wrong_type"
    for key in value:
        if key not in _RECEIPT_KEYS and key != _CODE_KEY:
            return None, "unknown_key"
    for key in _RECEIPT_KEYS:
        if key not in value:
            return None, "missing_key"
    for key in _RECEIPT_KEYS:
        val = value[key]
        if key in _INT_KEYS:
            if isinstance(val, bool) or not isinstance(val, int):
                return None, "wrong_type"
        elif not isinstance(val, str):
            return None, "wrong_type"
    if _CODE_KEY in value and not isinstance(value[_CODE_KEY], str):
        return None, "wrong_type"
    receipt = {k: value[k] for k in _RECEIPT_KEYS}
    if _CODE_KEY in value:
        receipt[_CODE_KEY] = value[_CODE_KEY]
    reason = _receipt_reason(receipt)
    if reason:
        return None, reason
    return receipt, None


def _receipt_reason(r):
    """Value checks of a well-typed receipt, in the order of Go's Receipt.Validate."""
    if r["protocol"] != PROTOCOL:
        return "bad_protocol"
    if not _is_minion_id(r["minion_id"]):
        return "bad_minion_id"
    if not _is_uuid(r["request_id"]):
        return "bad_request_id"
    if not _is_jid(r["jid"]):
        return "bad_jid"
    if not _is_profile(r["profile"]):
        return "bad_profile"
    if r["status"] not in _STATUSES:
        return "bad_status"
    code = r.get(_CODE_KEY)
    if code is not None and (code not in _CODES or r["status"] != "failed"):
        return "bad_code"
    if r["profile"] == "custom":
        evidence_free = r["status"] in ("not_started", "unknown") or code == _CODE_FENCED
        if not _is_digest(r["state_digest"]) and not (evidence_free and r["state_digest"] == ""):
            return "bad_digest"
    elif r["state_digest"] != "":
        return "bad_digest"
    passed, total = r["passed"], r["total"]
    if passed < 0 or total < 0 or passed > _MAX_COUNT or total > _MAX_COUNT:
        return "counts"
    ok = passed <= total
    if r["status"] == "succeeded":
        ok = ok and total >= 1 and passed == total
    elif code == _CODE_FENCED:
        ok = passed == 0 and total == 0
    elif r["status"] == "failed":
        ok = ok and passed < total
    else:
        ok = passed == 0 and total == 0
    if not ok:
        return "counts"
    return None


def _encode_receipt(receipt):
    reason = _receipt_reason(receipt)
    if reason:
        raise CommandExecutionError("oduflow_job: internal error: invalid receipt ({})".format(reason))
    return _canonical_json(receipt)


# ---------------------------------------------------------------------------------------
# Reduction (the same table as Go receipt.Reduce)
# ---------------------------------------------------------------------------------------


def _contains_trimmed(value):
    """Whether Salt trimmed the return: the string VALUE_TRIMMED as any value, anywhere."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item == _VALUE_TRIMMED:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False


def _reduce(ret):
    """Reduce a state return to (status, passed, total). Nothing else leaves it."""
    unknown = ("unknown", 0, 0)
    if not isinstance(ret, dict) or not ret:
        return unknown
    if _contains_trimmed(ret):
        return unknown
    passed = 0
    for key, entry in ret.items():
        if not isinstance(key, str):
            return unknown
        if not isinstance(entry, dict):
            return unknown
        found = False
        result = None
        for fkey, fval in entry.items():
            if isinstance(fkey, str) and fkey == "result":
                found, result = True, fval
        if not found:
            return unknown
        if result is True:
            passed += 1
    total = len(ret)
    if passed == total:
        return ("succeeded", passed, total)
    return ("failed", passed, total)


# ---------------------------------------------------------------------------------------
# Durable store
# ---------------------------------------------------------------------------------------

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC


class _Store(object):
    """The receipt directory, opened once by walking every path component with O_NOFOLLOW
    relative to its parent's descriptor. All later operations use the directory descriptor,
    so a path swapped after the walk cannot redirect them."""

    def __init__(self, path, create=True):
        self.path = path
        self.uid = os.geteuid()
        self.fd = self._open_dir(path, create)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- directory ----------------------------------------------------------------------

    def _open_dir(self, path, create):
        if not isinstance(path, str) or not os.path.isabs(path):
            raise _StoreError("receipt directory must be an absolute path")
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise _StoreError("receipt directory must be a normalized path")
        fd = os.open("/", _O_DIR)
        try:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                try:
                    nfd = os.open(part, _O_DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno == errno.ENOENT and create:
                        try:
                            os.mkdir(part, 0o700, dir_fd=fd)
                        except OSError as mexc:
                            if mexc.errno != errno.EEXIST:
                                raise _StoreError("cannot create directory", part)
                        nfd = self._reopen_created(part, fd)
                    elif exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _StoreError("symlink or non-directory in path", part)
                    elif exc.errno == errno.ENOENT:
                        raise _StoreError("receipt directory does not exist")
                    else:
                        raise _StoreError("cannot open directory", part)
                os.close(fd)
                fd = nfd
                st = os.fstat(fd)
                if not stat.S_ISDIR(st.st_mode):
                    raise _StoreError("not a directory", part)
                if last:
                    if st.st_uid != self.uid:
                        raise _StoreError("receipt directory has a foreign owner")
                    if st.st_mode & 0o077:
                        raise _StoreError("receipt directory grants group/other permissions")
                else:
                    if st.st_uid not in (0, self.uid):
                        raise _StoreError("path component has a foreign owner", part)
                    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                        raise _StoreError("path component is writable by others", part)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _reopen_created(self, part, parent_fd):
        try:
            nfd = os.open(part, _O_DIR, dir_fd=parent_fd)
        except OSError:
            raise _StoreError("cannot open created directory", part)
        st = os.fstat(nfd)
        if st.st_uid == self.uid and stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(nfd, 0o700)
        return nfd

    # -- files --------------------------------------------------------------------------

    @staticmethod
    def _check_name(name):
        if not isinstance(name, str) or not _NAME_RE.match(name) or name.startswith(".tmp"):
            raise _StoreError("invalid record name")

    def _check_file(self, st, name):
        if not stat.S_ISREG(st.st_mode):
            raise _StoreError("not a regular file", name)
        if st.st_uid != self.uid:
            raise _StoreError("foreign owner", name)
        if st.st_mode & 0o077:
            raise _StoreError("group/other permissions", name)
        if st.st_nlink > 1:
            raise _StoreError("multiple links", name)
        return st

    def _open_file(self, name, flags, mode=0o600):
        self._check_name(name)
        try:
            return os.open(name, flags | os.O_NOFOLLOW | _O_CLOEXEC | os.O_NONBLOCK, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return None
            if exc.errno == errno.ELOOP:
                raise _StoreError("symlink", name)
            raise _StoreError("cannot open ({})".format(errno.errorcode.get(exc.errno, exc.errno)), name)

    def _open_checked(self, name, flags):
        """Open name and apply the file rules. Returns (fd, stat) or (None, None) when it
        does not exist. A regular file with a link count of 0 was replaced (renamed over)
        or removed between the lookup and the fstat (ext4 and tmpfs show this to a
        concurrent opener while a worker commits): the open is retried so the caller sees
        the current file, never a spurious refusal. Only more than one link is refused."""
        for attempt in range(_REPLACED_RETRIES + 1):
            fd = self._open_file(name, flags)
            if fd is None:
                return None, None
            try:
                st = os.fstat(fd)
                if st.st_nlink == 0 and stat.S_ISREG(st.st_mode):
                    os.close(fd)
                    fd = None
                    if attempt < _REPLACED_RETRIES:
                        time.sleep(_REPLACED_PAUSE)
                    continue
                self._check_file(st, name)
                return fd, st
            except BaseException:
                if fd is not None:
                    os.close(fd)
                raise
        raise _StoreError("keeps being replaced", name)

    def read(self, name):
        """The record's bytes, or None when it does not exist."""
        fd, st = self._open_checked(name, os.O_RDONLY)
        if fd is None:
            return None
        try:
            if st.st_size > _MAX_RECORD_BYTES:
                raise _StoreError("record too large", name)
            chunks = []
            size = 0
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > _MAX_RECORD_BYTES:
                    raise _StoreError("record too large", name)
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def exists(self, name):
        self._check_name(name)
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise _StoreError("cannot stat", name)
        if stat.S_ISLNK(st.st_mode):
            raise _StoreError("symlink", name)
        return True

    def write_atomic(self, name, data):
        """Exclusive temporary file, fsync, rename over name, directory fsync."""
        self._check_name(name)
        tmp = ".tmp-{}-{}".format(name, os.urandom(8).hex())
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _O_CLOEXEC,
                0o600,
                dir_fd=self.fd,
            )
        except OSError:
            raise _StoreError("cannot create temporary file", name)
        try:
            try:
                os.fchmod(fd, 0o600)
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            raise
        os.fsync(self.fd)

    # -- locks --------------------------------------------------------------------------

    def open_lock(self, name, create=True):
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        fd, _ = self._open_checked(name, flags)
        return fd

    def try_lock(self, name, patience=0.0):
        """Take an exclusive flock without blocking (retrying for `patience` seconds).
        Returns the descriptor holding the lock, or None when someone else holds it."""
        fd = self.open_lock(name)
        deadline = time.monotonic() + patience
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise _StoreError("cannot lock", name)
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)

    def lock_blocking(self, name):
        fd = self.open_lock(name)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def is_locked(self, name):
        """Whether a live process holds the lock right now (a missing lock file is free)."""
        fd = self.open_lock(name, create=False)
        if fd is None:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return True
                raise _StoreError("cannot probe lock", name)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)


def _release(fd):
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _jid_name(jid):
    return "jid-{}.json".format(jid)


def _req_name(request_id):
    return "req-{}.json".format(request_id)


def _req_lock_name(request_id):
    return "req-{}.lock".format(request_id)


def _record(kind, binding):
    rec = {"record": kind, "protocol": PROTOCOL}
    rec.update(binding)
    return rec


def _parse_record(data, name, kind):
    """Parse a JID index or running record strictly; anything else is unresolved."""
    try:
        value = _loads_strict(data)
    except (ValueError, RecursionError):
        raise _StoreError("malformed record", name)
    if not isinstance(value, _Pairs):
        raise _StoreError("malformed record", name)
    rec = dict(value)
    if len(rec) != len(value) or sorted(rec) != sorted(_RECORD_KEYS):
        raise _StoreError("malformed record", name)
    if rec["record"] != kind or rec["protocol"] != PROTOCOL or isinstance(rec["protocol"], bool):
        raise _StoreError("malformed record", name)
    if not (
        _is_minion_id(rec["minion_id"])
        and _is_uuid(rec["request_id"])
        and _is_jid(rec["jid"])
        and _is_profile(rec["profile"])
        and isinstance(rec["state_digest"], str)
        and (rec["state_digest"] == "" or _is_digest(rec["state_digest"]))
    ):
        raise _StoreError("malformed record", name)
    return rec


def _read_request(store, request_id):
    """Returns (kind, value): (None, None), ("running", record) or ("terminal", receipt)."""
    name = _req_name(request_id)
    data = store.read(name)
    if data is None:
        return None, None
    try:
        probe = _loads_strict(data)
    except (ValueError, RecursionError):
        raise _StoreError("malformed record", name)
    if isinstance(probe, _Pairs) and any(k == "record" for k, _ in probe):
        return "running", _parse_record(data, name, "running")
    receipt, reason = _decode_receipt(data)
    if reason or receipt["status"] not in ("succeeded", "failed"):
        raise _StoreError("malformed receipt", name)
    return "terminal", receipt


def _read_jid_index(store, jid):
    name = _jid_name(jid)
    data = store.read(name)
    if data is None:
        return None
    return _parse_record(data, name, "jid_index")


_BINDING_FIELDS = ("minion_id", "request_id", "jid", "profile", "state_digest")


def _check_binding(found, want, fields=_BINDING_FIELDS):
    for field in fields:
        if field in want and found.get(field) != want[field]:
            raise _BindingConflict(field)


# ---------------------------------------------------------------------------------------
# Runtime guard and raw-result shims
# ---------------------------------------------------------------------------------------


def _opts():
    try:
        return __opts__  # noqa: F821 - injected by the Salt loader
    except NameError:
        return {}


def _opt(key, default=None):
    try:
        return _opts().get(key, default)
    except Exception:  # pylint: disable=broad-except
        return default


def _salt_version():
    try:
        import salt.version  # pylint: disable=import-outside-toplevel

        ver = salt.version.__saltstack_version__
        text = getattr(ver, "string", None)
        if not isinstance(text, str):
            text = str(ver)
        return text
    except Exception:  # pylint: disable=broad-except
        return None


def _grains_version():
    try:
        value = __grains__.get("saltversion")  # noqa: F821
    except Exception:  # pylint: disable=broad-except
        return None
    return value if isinstance(value, str) else None


class _GuardFailure(Exception):
    """One runtime guard check did not hold; str() is the short reason."""


def _resolve(module_name, class_name, attr):
    module = importlib.import_module(module_name)
    owner = getattr(module, class_name) if class_name else module
    return owner, owner.__dict__[attr] if class_name else getattr(owner, attr)


def _param_names(func):
    return [p.name for p in inspect.signature(func).parameters.values()]


def _expect_signature(module_name, class_name, attr, forms, ctx=None):
    """The function, if its parameter names are one of forms (a tuple of (label, names)): every
    form it has had in the Salt releases the module supports, each named by the releases that
    have it. The matched label goes to ctx["forms"] (capabilities reports it); anything else is
    refused by name."""
    where = ".".join(p for p in (module_name, class_name, attr) if p)
    try:
        _, func = _resolve(module_name, class_name, attr)
        names = _param_names(func)
    except Exception:  # pylint: disable=broad-except
        raise _GuardFailure("missing Salt function {}".format(where))
    for label, expected in forms:
        if names == list(expected):
            if ctx is not None and len(forms) > 1:
                ctx.setdefault("forms", {})[where] = label
            return func
    raise _GuardFailure("unexpected signature of {}".format(where))


def _code_tree(code, path=()):
    """(path, code) for code and every code object nested in it (functions, classes,
    lambdas, comprehensions); path is the chain of enclosing names."""
    here = path + (code.co_name,)
    yield here, code
    for const in code.co_consts:
        if inspect.iscode(const):
            for item in _code_tree(const, here):
                yield item


def _module_code(module, ctx):
    """The module's own code object (its cached bytecode through its loader, else its
    source compiled): every function, method and closure it defines, decorated or not (a
    decorator hides the function object, not its code). Kept in ctx for one guard run."""
    cache = ctx.setdefault("code", {})
    if module.__name__ in cache:
        return cache[module.__name__]
    code = None
    get_code = getattr(getattr(module, "__loader__", None), "get_code", None)
    if get_code is not None:
        try:
            code = get_code(module.__name__)
        except Exception:  # pylint: disable=broad-except
            code = None
    if not inspect.iscode(code):
        try:
            source = inspect.getsource(module)
        except Exception:  # pylint: disable=broad-except
            raise _GuardFailure("cannot read the source of {}".format(module.__name__))
        code = compile(source, getattr(module, "__file__", None) or "<salt>", "exec", dont_inherit=True)
    cache[module.__name__] = code
    return code


def _only_inside(module, names, owner_path, what, ctx):
    """Every code object of module that uses one of names (as a global or attribute) lies
    inside the function at owner_path (e.g. ("State", "event")): that function is the only
    way to reach them, so replacing it cuts them off."""
    found = False
    for path, code in _code_tree(_module_code(module, ctx)):
        if not code.co_flags & inspect.CO_NEWLOCALS:
            continue  # module and class bodies only bind names; functions use them
        if not set(code.co_names) & set(names):
            continue
        if path[1:1 + len(owner_path)] != owner_path:
            raise _GuardFailure("{} is reachable outside {}.{} ({})".format(
                what, module.__name__, ".".join(owner_path), ".".join(path[1:])))
        found = True
    return found


# The Salt internals the shims replace or rely on, each with every parameter list it has had from
# 3006.0 to the 3008 line, named by the releases that have it. Walked with `git log -L` of each
# function over Salt's release branches (3006.x, 3007.x, master) and its v3006.0 to v3006.10 and
# v3007.0 tags; receipt/minion/README.md has the table. One function changed: State.call_parallel
# gained inject_globals in Salt c4361cf828 (2024-10-25, "Ensure injected globals are defined on
# spawning platforms"), released in 3006.10 and 3007.2. A new form is added here only with a shim
# that accepts it and a test with a fake of that shape (tests/test_minion_guard_forms.py).
_FORM_ALL = "3006.0+"
_STATE_FUNCTIONS = (
    ("salt.utils.files", None, "fopen", ((_FORM_ALL, ("args", "kwargs")),)),
    ("salt.modules.state", None, "sls", ((_FORM_ALL, ("mods", "test", "exclude", "queue", "sync_mods",
                                                      "state_events", "kwargs")),)),
    ("salt.modules.state", None, "apply_", ((_FORM_ALL, ("mods", "kwargs")),)),
    ("salt.modules.state", None, "high", ((_FORM_ALL, ("data", "test", "queue", "kwargs")),)),
)
_STATE_EVENT_FORMS = ((_FORM_ALL, ("self", "chunk_ret", "length", "fire_event")),)
_CALL_PARALLEL_FORMS = (
    ("3006.0-3006.9, 3007.0-3007.1", ("self", "cdata", "low")),
    ("3006.10+, 3007.2+, 3008", ("self", "cdata", "low", "inject_globals")),
)
_LOAD_ARGS_FORMS = ((_FORM_ALL, ("func", "args", "data", "ignore_invalid")),)
_GET_RSA_KEY_FORMS = ((_FORM_ALL, ("path", "passphrase")),)
_EVENT_NAMES = ("fire_event", "fire_master", "get_master_event", "get_event", "SaltEvent", "MinionEvent")
_SPAWN_NAMES = ("_call_parallel_target", "Process", "SignalHandlingProcess", "Popen", "fork", "Thread")
_PROCESS_NAME_RE = re.compile(r"\AProcessPayload\(jid=([0-9]{20})\)\Z")


def _check_salt_version(ctx):
    """Salt 3006.0 or later, and salt.version agrees with the grains."""
    version = _salt_version()
    if version is None:
        raise _GuardFailure("cannot determine the Salt version")
    match = re.match(r"\A([0-9]+)(?:\.([0-9]+))?", version)
    if not match or int(match.group(1)) < 3006:
        raise _GuardFailure("Salt {} is older than 3006.0".format(version or '""'))
    grains_version = _grains_version()
    if grains_version is not None and grains_version != version:
        raise _GuardFailure("Salt version mismatch between salt.version and grains")


def _check_multiprocessing(ctx):
    """The shims patch process-wide objects, so this job must be alone in its process: a
    minion with multiprocessing: True runs every job in its own process named
    ProcessPayload(jid=<jid>) (its main thread); salt-call runs one job per process. A
    threaded minion (multiprocessing: False) runs jobs as threads of one process."""
    import multiprocessing  # pylint: disable=import-outside-toplevel
    import threading  # pylint: disable=import-outside-toplevel

    if _opt("multiprocessing") is not True:
        raise _GuardFailure("multiprocessing must be True (isolated job processes are required)")
    if threading.current_thread() is not threading.main_thread():
        raise _GuardFailure("this job runs in a thread of a shared process")
    if _opt("__cli") == "salt-call":
        return
    name = multiprocessing.current_process().name
    match = _PROCESS_NAME_RE.match(name) if isinstance(name, str) else None
    if not match:
        raise _GuardFailure("this job does not run in its own Salt job process")
    pub_jid = ctx.get("pub_jid")
    if pub_jid is not None and match.group(1) != pub_jid:
        raise _GuardFailure("this job's process belongs to another JID")


def _state_function(fun):
    """The function __salt__[fun] runs, unwrapped from the loader."""
    try:
        func = __salt__[fun]  # noqa: F821
    except NameError:
        raise _GuardFailure("Salt loader globals are missing")
    except Exception:  # pylint: disable=broad-except
        raise _GuardFailure("{} is not available".format(fun))
    return inspect.unwrap(func)


def _check_state_functions(ctx):
    """state.apply/state.high exist with the parameters run passes, and resolve
    salt.utils.files (the module the cache shim patches) through the very module object."""
    import sys  # pylint: disable=import-outside-toplevel

    for module_name, class_name, attr, forms in _STATE_FUNCTIONS:
        _expect_signature(module_name, class_name, attr, forms, ctx)
    files = sys.modules.get("salt.utils.files")
    for fun in ("state.apply", "state.high"):
        func = _state_function(fun)
        salt_pkg = getattr(func, "__globals__", {}).get("salt")
        if files is None or getattr(getattr(salt_pkg, "utils", None), "files", None) is not files:
            raise _GuardFailure("{} does not reach salt.utils.files through the patched module".format(fun))


def _check_state_cache_writes(ctx):
    """salt.modules.state.sls writes sls.p and <name>.cache.p only through
    salt.utils.files.fopen, and the shim really turns such a write into memory."""
    import salt.utils.files  # pylint: disable=import-outside-toplevel

    _, sls = _resolve("salt.modules.state", None, "sls")
    try:
        source = inspect.getsource(sls)
    except Exception:  # pylint: disable=broad-except
        raise _GuardFailure("cannot inspect salt.modules.state.sls")
    if source.count("open(") != source.count("salt.utils.files.fopen(") or "sls.p" not in source:
        raise _GuardFailure("salt.modules.state.sls writes its caches in an unverified way")
    cachedir = _opt("cachedir")
    if not isinstance(cachedir, str) or not cachedir:
        raise _GuardFailure("minion cachedir is not set")
    probe = os.path.join(cachedir, "sls.p")
    before = _lstat_key(probe)
    original = salt.utils.files.fopen
    with _Shield(cachedir):
        handle = salt.utils.files.fopen(probe, "w+b")
        try:
            sunk = isinstance(handle, _Sink)
            handle.write(b"oduflow-guard-probe")
        finally:
            handle.close()
    if not sunk or _lstat_key(probe) != before:
        raise _GuardFailure("a state cache write escaped the shim")
    if salt.utils.files.fopen is not original:
        raise _GuardFailure("salt.utils.files.fopen was not restored")


def _check_highstate_cache_writes():
    """The highstate's compiled cache (highstate.cache.p) is written by
    salt.state.BaseHighState.call_highstate only through salt.utils.files.fopen: the shim sinks it."""
    _, call = _resolve("salt.state", "BaseHighState", "call_highstate")
    try:
        source = inspect.getsource(call)
    except Exception:  # pylint: disable=broad-except
        raise _Refused("oduflow_job: cannot inspect salt.state.BaseHighState.call_highstate")
    if source.count("open(") != source.count("salt.utils.files.fopen(") or ".cache.p" not in source:
        raise _Refused("oduflow_job: the highstate writes its cache in an unverified way")


def _lstat_key(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _state_class_overrides(cls, attrs):
    seen, stack = set(), list(cls.__subclasses__())
    while stack:
        sub = stack.pop()
        if sub in seen:
            continue
        seen.add(sub)
        for attr in attrs:
            if attr in sub.__dict__:
                return "{}.{}".format(sub.__name__, attr)
        stack.extend(sub.__subclasses__())
    return None


def _check_state_event(ctx):
    """State.event(self, chunk_ret, length, fire_event) is the only code in salt.state that
    reaches the event bus, and no loaded subclass of State overrides it."""
    import salt.state  # pylint: disable=import-outside-toplevel

    _expect_signature("salt.state", "State", "event", _STATE_EVENT_FORMS, ctx)
    _only_inside(salt.state, _EVENT_NAMES, ("State", "event"), "the event bus", ctx)
    override = _state_class_overrides(salt.state.State, ("event", "call_parallel"))
    if override:
        raise _GuardFailure("{} overrides the shimmed method".format(override))


def _check_call_parallel(ctx):
    """State.call_parallel(self, cdata, low[, inject_globals]) is the only code in salt.state
    that starts a process or thread (the parallel target writes raw results below
    cachedir/<jid>); both forms are shimmed (_Shield's call_parallel takes either)."""
    import salt.state  # pylint: disable=import-outside-toplevel

    _expect_signature("salt.state", "State", "call_parallel", _CALL_PARALLEL_FORMS, ctx)
    _only_inside(salt.state, _SPAWN_NAMES, ("State", "call_parallel"), "process creation", ctx)


def _check_pub_jid(ctx):
    """salt.minion.load_args_and_kwargs gives run the publication's own JID as __pub_jid,
    over any __pub_jid a caller put into the arguments."""
    func = _expect_signature("salt.minion", None, "load_args_and_kwargs", _LOAD_ARGS_FORMS, ctx)
    request = "00000000-0000-4000-8000-000000000000"
    jid = "20000101000000000001"
    args = [request, "configure", {"__kwarg__": True, "__pub_jid": "1" * 20}]
    out_args, out_kwargs = func(run, args, {"jid": jid, "fun": "oduflow_job.run"})
    if list(out_args) != [request, "configure"] or out_kwargs.get("__pub_jid") != jid:
        raise _GuardFailure("load_args_and_kwargs does not inject the publication JID as __pub_jid")


# A public RSA test key (a known-answer test of the signing backend, never a secret): the
# backend salt.crypt imported signs a probe with it, and the signature is checked here with
# integer arithmetic against the key's own modulus.
_KAT_KEY_PEM = (
    b"-----BEGIN RSA PRIVATE KEY-----\n"
    b"MIIEpQIBAAKCAQEA5T6S9nVw4T0Kn1SJiAM3nS5ODMVrtAAiq2JcUVFeYYjc/2SW\n"
    b"sGIeuxF8QY4q12VbfSmJmuYIsdvu0LULvYzvK4UQuq1wIFuslJW6tuZgSG31FI4t\n"
    b"pvQvIiyJd6plpE/p57iXrTMgbp2l+cyzZhTQJmww7UzNJBhCCjEIE5ll4LMHLEdy\n"
    b"Sup26YopkeP+ax0Vcsu0T7viKEAXZYMfyag17yeX8qp9ONS1ZGjp/fkLUJrk67NR\n"
    b"XNZZTq/dIwFHouZiB/LvT6QaMOSxMf30NlVJ+I5ZSLyOhL1VRKCxhFp4Dn/aioAV\n"
    b"3HkYwZUhsv2QFxFOyPGLhdvPgn7ANLnNU/yEwwIDAQABAoIBAFqYvCPCjfW11fjZ\n"
    b"w/CItPXdUuMhMktUsl7g5HMOoSoSmKQl8JeMb3CmnGCb+rpdSCbSv5sDxfPkYyEA\n"
    b"K7+hbvPYBqB/4ownLrEZ60xVB0AYlH6nIcuVPPtYdotgQAMLwfjdrrO4PNz6WJm8\n"
    b"GDoDh69nmn5tl7ToEVFNx09XlDeUSWgVwKyeqeu8dUx0VkTPrGaAP8pIuUDkbyvo\n"
    b"qlzAxsYmT/ckYfAGJTc3Gg+F1ubZencasSQKVsKW/WRvC6VCNJTH2vtP83R95+LF\n"
    b"/nqgob/RuQph6XeIx8hcgxJVhhzh6mcpMMcr7DfEl6xk3YnE5Czwkjiu4Vx24p1Q\n"
    b"931JdYECgYEA+5J+2rQ53+KbWTBY7+vQmlgFqm/ILsy7fH1nNGQ3GvvzMY7RFUnb\n"
    b"Rv1eZrGFH5sQf/ZnggNmsCY0AFSmx/eqg0gkyL3uENKdIpWYwFyAJsTCJOrY20s+\n"
    b"Jn4Ud45K+zkPmUQxZqRshuHhB9kmc4YHBy8XCpU9ROfbKOaRW+RsaZECgYEA6Ud5\n"
    b"/FgcGsdz9pqeNHsMk99iETQe1vbNJ37nUDNlmtJ/QvNnSt65VH4Wetn0oNHieBaT\n"
    b"F5hsWf8cde/0koZeDRijzylsgrO0b/aZdSjLzZnY2Qk2VU+JO1ZCu7th1o7nn48Z\n"
    b"MSIFLrgKS+UGGgKa4rmN+A0xhMJU19PBreeWPxMCgYEAr2YDVf7EPymigDuqNpTm\n"
    b"m0X1pVBMdPy/V1ujoi6hEQpLE+lsM3iMDuHGeLkahN+7UEx+/HHcncH1Dan3ooI1\n"
    b"+1RIeUGbA1WkwyEkIDIeE2mpps2qprK+QV40bOrjsmalTonyG4tWM3C3UZ6AJZlz\n"
    b"uvmFChblYe55qfmfrT8Eq1ECgYEA42fxK6R86UIL8pcxqDlXvoMhp2GmuqlmvpzA\n"
    b"Q3eHEdEnjA2ZYOwTwKEVqvbzuR5BZg2joHnPDkBZ70JWqcvgvWWKsnVQOW2TdR3w\n"
    b"5Lw7SJc0RAbt92YMglKJxVZafv1aIDowNaxTXwK7ztZZB1wIvwJhujCqWB/U83yT\n"
    b"LsM2vQ8CgYEA9dWBMCM/GpUL4J5dtd7XQCCWfeYFnACHdezmBl8hG89MWj+BVtFt\n"
    b"4STzY682s+59c9QY0LRNcrpF5dVswp6J3tFO0hfo6YYk3It3gEQZa+cfeMPF/vEw\n"
    b"cswoCGcP/1rLZ+SnT65+pV+s7QJQq9VjO1fANQu61Buu/+KxTNyzyn4=\n"
    b"-----END RSA PRIVATE KEY-----\n"
)
_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def _der_integers(pem):
    """The leading INTEGERs of a PKCS#1 RSAPrivateKey (version, n, e, ...)."""
    body = b"".join(line for line in pem.splitlines() if line and not line.startswith(b"-----"))
    der = base64.b64decode(body)

    def header(pos):
        tag, length = der[pos], der[pos + 1]
        pos += 2
        if length & 0x80:
            size = length & 0x7F
            length = int.from_bytes(der[pos:pos + size], "big")
            pos += size
        return tag, length, pos

    tag, _, pos = header(0)
    if tag != 0x30:
        raise ValueError("not a DER sequence")
    out = []
    for _ in range(3):
        tag, length, pos = header(pos)
        if tag != 0x02:
            raise ValueError("not a DER integer")
        out.append(int.from_bytes(der[pos:pos + length], "big"))
        pos += length
    return out


def _rsa_pkcs1v15_sha256_ok(n, e, message, signature):
    size = (n.bit_length() + 7) // 8
    sig = int.from_bytes(bytes(signature), "big")
    if len(bytes(signature)) != size or sig >= n:
        return False
    encoded = pow(sig, e, n).to_bytes(size, "big")
    digest = _SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
    expected = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
    return encoded == expected


def _kat_key(crypt, backend):
    if backend == "m2crypto":
        return crypt.RSA.load_key_string(_KAT_KEY_PEM)
    if backend in ("cryptodome", "crypto"):
        return crypt.RSA.importKey(_KAT_KEY_PEM)
    serialization = getattr(crypt, "serialization", None) or importlib.import_module(
        "cryptography.hazmat.primitives.serialization")
    try:  # the key's own consistency check costs ~70 ms; the signature is verified below anyway
        return serialization.load_pem_private_key(_KAT_KEY_PEM, password=None, unsafe_skip_rsa_key_validation=True)
    except TypeError:  # cryptography before 39
        return serialization.load_pem_private_key(_KAT_KEY_PEM, password=None)


def _check_crypto(ctx):
    """The backend salt.crypt imported is one the signer knows, salt.crypt.get_rsa_key(path,
    passphrase) loads the minion key, and the backend's RSA PKCS#1 v1.5 SHA-256 signature of
    a probe verifies (a known-answer test)."""
    try:
        crypt = _salt_crypt()
    except Exception:  # pylint: disable=broad-except
        raise _GuardFailure("salt.crypt does not import")
    backend = _proof_backend(crypt)
    if backend is None:
        raise _GuardFailure("no known crypto backend in salt.crypt")
    _expect_signature("salt.crypt", None, "get_rsa_key", _GET_RSA_KEY_FORMS, ctx)
    message = _PROOF_PREFIX + b"guard\n" + b"{}"
    try:
        _, n, e = _der_integers(_KAT_KEY_PEM)
        signature = _sign(crypt, backend, _kat_key(crypt, backend), message)
    except Exception as exc:  # pylint: disable=broad-except
        raise _GuardFailure("the {} backend cannot sign ({})".format(backend, type(exc).__name__))
    if not _rsa_pkcs1v15_sha256_ok(n, e, message, signature):
        raise _GuardFailure("the {} backend's signature does not verify".format(backend))


# The runtime guard, in order; capabilities() lists the names. A check takes the guard run's
# context (pub_jid: run's JID or None; code: compiled modules) and raises _GuardFailure (or
# anything else, which counts as a failure too).
_GUARD_CHECKS = (
    ("salt_version", _check_salt_version),
    ("multiprocessing", _check_multiprocessing),
    ("state_functions", _check_state_functions),
    ("state_event", _check_state_event),
    ("call_parallel", _check_call_parallel),
    ("state_cache_writes", _check_state_cache_writes),
    ("pub_jid", _check_pub_jid),
    ("crypto", _check_crypto),
)


def _runtime_guard(pub_jid=None, forms=None):
    """Every precondition of the shims, checked by what Salt does rather than by its
    version. Returns None when all hold, else "<check>: <reason>" for the first failure.
    forms, a dict, receives the matched form of each internal that has had more than one."""
    ctx = {"pub_jid": pub_jid}
    try:
        for name, check in _GUARD_CHECKS:
            try:
                check(ctx)
            except _GuardFailure as exc:
                return "{}: {}".format(name, exc)
            except Exception as exc:  # pylint: disable=broad-except
                return "{}: check failed ({})".format(name, type(exc).__name__)
        return None
    finally:
        if forms is not None:
            forms.update(ctx.get("forms", {}))


class _Sink(io.BytesIO):
    """Where an intercepted state cache write goes: memory, discarded on close."""


class _TextSink(io.StringIO):
    pass


class _Shield(object):
    """Within `with`: state cache writes go to memory, reads through the cache path are
    refused, State.event is silent and State.call_parallel refuses. Restored on exit."""

    def __init__(self, cachedir):
        self.cachedir = cachedir
        self.intercepted = 0
        self.refused_reads = 0
        self.parallel_refused = 0
        self._saved = []

    def _is_cache_path(self, path):
        if isinstance(path, int):
            return False
        try:
            path = os.fspath(path)
        except TypeError:
            return False
        if isinstance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        base = os.path.basename(path)
        if base != "sls.p" and not base.endswith(".cache.p"):
            return False
        parent = os.path.dirname(os.path.abspath(path))
        cache = self.cachedir
        return os.path.normpath(parent) == os.path.normpath(os.path.abspath(cache)) or (
            os.path.realpath(parent) == os.path.realpath(cache)
        )

    def __enter__(self):
        import salt.state  # pylint: disable=import-outside-toplevel
        import salt.utils.files  # pylint: disable=import-outside-toplevel

        shield = self
        orig_fopen = salt.utils.files.fopen

        def fopen(*args, **kwargs):
            path = args[0] if args else kwargs.get("file")
            if shield._is_cache_path(path):
                mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
                if not isinstance(mode, str):
                    mode = "r"
                if any(c in mode for c in "wax+"):
                    shield.intercepted += 1
                    binary = "b" in mode or kwargs.get("binary")
                    return _Sink() if binary else _TextSink()
                shield.refused_reads += 1
                raise PermissionError(
                    errno.EACCES, "oduflow_job: reads through the state cache path are refused"
                )
            return orig_fopen(*args, **kwargs)

        # The shims take every form the guard accepts (_STATE_EVENT_FORMS, _CALL_PARALLEL_FORMS),
        # positionally or by keyword: a shim raising TypeError would surface as a state error
        # instead of the refusal. The guard, not the shim, decides which forms are trusted.
        def event(self, chunk_ret, length, fire_event=False):  # pylint: disable=unused-argument
            return None

        def call_parallel(self, cdata, low, inject_globals=None):  # pylint: disable=unused-argument
            shield.parallel_refused += 1
            raise _ParallelRefused("oduflow_job: per-state parallel execution is refused")

        state_cls = salt.state.State
        self._saved = [
            (salt.utils.files, "fopen", orig_fopen, False),
            (state_cls, "event", state_cls.__dict__["event"], True),
            (state_cls, "call_parallel", state_cls.__dict__["call_parallel"], True),
        ]
        salt.utils.files.fopen = fopen
        state_cls.event = event
        state_cls.call_parallel = call_parallel
        return self

    def __exit__(self, *exc):
        for owner, attr, orig, _ in reversed(self._saved):
            setattr(owner, attr, orig)
        self._saved = []
        return False


# ---------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------


def _receipt_dir():
    value = _opt("oduflow_receipt_dir")
    return value if isinstance(value, str) and value else _DEFAULT_RECEIPT_DIR


def _pillar_get(key):
    current = __pillar__  # noqa: F821
    for part in key.split(":"):
        try:
            current = current.get(part)
        except AttributeError:
            return None
        if current is None:
            return None
    return current


def _module_sha256():
    try:
        with open(__file__, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except Exception:  # pylint: disable=broad-except
        return ""


def capabilities():
    """
    Report protocol 1 support and readiness.

    CLI Example:

    .. code-block:: bash

        salt 'client-*' oduflow_job.capabilities
    """
    forms = {}
    guard = _runtime_guard(forms=forms)
    try:
        errors = __pillar__.get("_errors")  # noqa: F821
        pillar_ok = not errors
    except Exception:  # pylint: disable=broad-except
        pillar_ok = False
    ready_key = _opt("oduflow_pillar_ready_key")
    key_configured = isinstance(ready_key, str) and ready_key != ""
    if key_configured and pillar_ok:
        pillar_ok = _pillar_get(ready_key) is True
    profiles = list(_PROFILES)
    table_caps = {}
    try:
        table, digest, configured = _table()
        if configured:
            profiles = sorted(table["profiles"]) + ["custom"]
            table_caps = {"profile_table_sha256": digest, "minion_ids": table["minion_ids"]}
            if not _own_id_ok(_opt("id"), table):
                table_caps["profile_table_sha256"] = ""
                table_caps["profile_table_error"] = "this minion's id is outside the table's id policy"
    except _TableError as exc:
        profiles = ["custom"]
        table_caps = {"profile_table_sha256": "", "profile_table_error": str(exc)}
    caps = {
        "protocol": PROTOCOL,
        "module": __virtualname__,
        "module_sha256": _module_sha256(),
        "profiles": profiles,
        "salt_version": _salt_version() or "",
        "runtime_guard_checks": [name for name, _ in _GUARD_CHECKS],
        "runtime_guard": guard is None,
        "runtime_guard_error": guard or "",
        "runtime_guard_forms": forms,
        "multiprocessing": _opt("multiprocessing") is True,
        "pillar_ready": bool(pillar_ok),
        "pillar_ready_key_configured": key_configured,
        "proof": _proof_capability(),
        "fencing": _fencing_capability(guard),
    }
    caps.update(table_caps)  # nothing without the config key: the answer is as before tables
    return caps


def _fencing_capability(guard):
    """The fencing capability with this minion's high-water mark ("mark": the highest token it
    has started or fenced, 0 before any). A dispatcher whose store issues tokens from a lower
    counter (a new or restored claim store, another cluster) asks its store for a token above
    the mark instead of publishing a run this module would refuse. The answer is not signed: a
    forged mark can only get runs refused as fenced, never run twice. A fence record that cannot
    be read makes fencing not ready (a run would be refused on it anyway)."""
    cap = {"version": _FENCING_VERSION, "ready": guard is None,
           "token_required": not _unfenced_allowed(), "mark": 0}
    minion_id = _opt("id")
    if not _is_minion_id(minion_id) or not _dir_exists(_receipt_dir()):
        return cap
    try:
        with _Store(_receipt_dir(), create=False) as store:
            cap["mark"] = _read_fence(store, minion_id)
    except Exception as exc:  # pylint: disable=broad-except
        cap["ready"] = False
        cap["error"] = type(exc).__name__
    if cap["mark"] >= _MAX_FENCE_TOKEN:
        # No token above the mark exists: every run would be fenced. Not ready, and why.
        cap["ready"] = False
        cap["error"] = "exhausted"
    return cap


def _set_retcode(code):
    try:
        __context__["retcode"] = code  # noqa: F821
    except NameError:
        pass


def _summary_receipt(binding, status, passed=0, total=0):
    receipt = {"protocol": PROTOCOL}
    receipt.update(binding)
    receipt.update({"status": status, "passed": passed, "total": total})
    return {k: receipt[k] for k in _RECEIPT_KEYS}


def _fenced_receipt(binding):
    """The terminal receipt of a request that never ran because it was fenced."""
    receipt = _summary_receipt(binding, "failed")
    receipt[_CODE_KEY] = _CODE_FENCED
    return receipt


def _parse_custom(state_data_json):
    """Returns (high, digest) for a custom payload, or raises _Refused."""
    if not isinstance(state_data_json, str) or not state_data_json:
        raise _Refused("oduflow_job: custom requires state_data_json")
    if len(state_data_json.encode("utf-8", "surrogatepass")) > _MAX_STATE_DATA_BYTES:
        raise _Refused("oduflow_job: state_data_json is too large")
    try:
        value = _loads_strict(state_data_json)
    except (ValueError, RecursionError):
        raise _Refused("oduflow_job: state_data_json is not valid JSON")
    if not isinstance(value, _Pairs):
        raise _Refused("oduflow_job: state_data_json must be a JSON object")
    payload = dict(value)
    if len(payload) != len(value) or sorted(payload) != ["digest", "high"]:
        raise _Refused("oduflow_job: state_data_json must hold exactly digest and high")
    digest, high = payload["digest"], payload["high"]
    if not _is_digest(digest):
        raise _Refused("oduflow_job: invalid state digest")
    if not isinstance(high, dict) or not high or len(high) > _MAX_STATE_IDS:
        raise _Refused("oduflow_job: high data must be a mapping of 1 to 100 state ids")
    for sid, body in high.items():
        if sid.startswith("__") or sid in ("include", "extend", "exclude"):
            raise _Refused("oduflow_job: high data holds a reserved top-level key")
        if not isinstance(body, dict):
            raise _Refused("oduflow_job: high data entries must be mappings")
    _refuse_parallel(high, 0)
    try:
        actual = _digest(high)
    except _NotCanonical:
        raise _Refused("oduflow_job: high data has no canonical JSON form")
    if actual != digest:
        raise _Refused("oduflow_job: state digest mismatch")
    return high, digest


def _refuse_parallel(value, depth):
    if depth > _MAX_DEPTH:
        raise _Refused("oduflow_job: high data is nested too deeply")
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "parallel":
                raise _Refused("oduflow_job: explicit parallel is refused")
            _refuse_parallel(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _refuse_parallel(item, depth + 1)


def _validate_run(request_id, profile, state_data_json, kwargs, profile_table=None):
    minion_id = _opt("id")
    try:
        table, table_digest, configured = _table()
    except _TableError as exc:
        raise _Refused("oduflow_job: the minion's oduflow_profiles is invalid: " + str(exc))
    if not _own_id_ok(minion_id, table):
        raise _Refused("oduflow_job: this minion's id is outside the id policy")
    if profile_table is not None or (configured and table_digest != _digest(_SEEDS_TABLE)):
        # A dispatcher with a table other than the seeds' names its digest: it must be this one.
        if not isinstance(profile_table, str) or profile_table != table_digest:
            raise _Refused("oduflow_job: the dispatcher's profile table differs from this minion's")
    if not _is_uuid(request_id):
        raise _Refused("oduflow_job: invalid request id")
    if not isinstance(profile, str) or (profile != "custom" and profile not in table["profiles"]):
        raise _Refused("oduflow_job: unknown profile")
    options = sorted(k for k in kwargs if not (isinstance(k, str) and k.startswith("__pub_")))
    if options:
        raise _Refused("oduflow_job: caller execution options are refused")
    jid = kwargs.get("__pub_jid")
    if not _is_jid(jid):
        raise _Refused("oduflow_job: the publication JID (__pub_jid) is missing or invalid")
    high, digest = None, ""
    if profile != "custom":
        high = table["profiles"][profile]  # what _execute applies: this minion's own table
        if high.get("highstate") is True:
            _check_highstate_cache_writes()  # before anything is written
    if profile == "custom":
        high, digest = _parse_custom(state_data_json)
    elif state_data_json not in ("", None):
        raise _Refused("oduflow_job: state_data_json must be empty for fixed profiles")
    binding = {
        "minion_id": minion_id,
        "request_id": request_id,
        "jid": jid,
        "profile": profile,
        "state_digest": digest,
    }
    return binding, high


def _existing_evidence(store, binding):
    """What local evidence says about this publication, with the request lock held.
    Returns None (no evidence) or a receipt dict to return without executing."""
    kind, value = _read_request(store, binding["request_id"])
    index = _read_jid_index(store, binding["jid"])
    fields = _BINDING_FIELDS
    if kind == "terminal" and value.get(_CODE_KEY) == _CODE_FENCED and value["state_digest"] == "":
        fields = _BINDING_FIELDS[:-1]  # fenced by fence(), which never knew the payload
    if index is not None:
        _check_binding(index, binding, fields)
    if kind == "terminal":
        _check_binding(value, binding, fields)
        return value
    if kind == "running":
        _check_binding(value, binding)
        return _summary_receipt(binding, "unknown")  # its worker is gone: we hold the lock
    if index is not None:
        return _summary_receipt(binding, "unknown")  # partial claim: index without record
    return None


def _write_jid_index(store, binding):
    """Commit the JID index (first write of a claim). The caller holds index.lock."""
    if store.exists(_jid_name(binding["jid"])):
        index = _read_jid_index(store, binding["jid"])
        _check_binding(index, binding)
        raise _BindingConflict("jid")
    store.write_atomic(_jid_name(binding["jid"]), _canonical_json(_record("jid_index", binding)))


# ---------------------------------------------------------------------------------------
# Fencing: the per-client high-water mark of fence tokens
# ---------------------------------------------------------------------------------------


def _unfenced_allowed():
    """The legacy mode: the operator's minion option oduflow_allow_unfenced_runs, exactly True."""
    return _opt(_ALLOW_UNFENCED_OPTION) is True


def _fence_token(value):
    """A fence token: None when absent, else an integer from 1 to 2^53-1 (or _Refused)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_FENCE_TOKEN:
        raise _Refused("oduflow_job: invalid fence token (an integer from 1 to 2^53-1)")
    return value


def _read_fence(store, minion_id):
    """The high-water mark (0 without a fence record). The record is exactly
    {"record": "fence", "protocol": 1, "minion_id": <this minion>, "token": N}; anything else
    is unresolved and never replaced."""
    data = store.read(_FENCE_NAME)
    if data is None:
        return 0
    try:
        value = _loads_strict(data)
    except (ValueError, RecursionError):
        raise _StoreError("malformed fence record", _FENCE_NAME)
    if not isinstance(value, _Pairs):
        raise _StoreError("malformed fence record", _FENCE_NAME)
    rec = dict(value)
    if len(rec) != len(value) or sorted(rec) != ["minion_id", "protocol", "record", "token"]:
        raise _StoreError("malformed fence record", _FENCE_NAME)
    token = rec["token"]
    if (
        rec["record"] != "fence"
        or rec["protocol"] != PROTOCOL
        or isinstance(rec["protocol"], bool)
        or isinstance(token, bool)
        or not isinstance(token, int)
        or not 1 <= token <= _MAX_FENCE_TOKEN
    ):
        raise _StoreError("malformed fence record", _FENCE_NAME)
    if rec["minion_id"] != minion_id:
        raise _StoreError("fence record of another minion", _FENCE_NAME)
    return token


def _raise_fence(store, minion_id, token):
    """Raise the high-water mark to at least token (durable before returning). The caller
    holds index.lock. Returns the mark."""
    mark = _read_fence(store, minion_id)
    if token > mark:
        record = {"record": "fence", "protocol": PROTOCOL, "minion_id": minion_id, "token": token}
        store.write_atomic(_FENCE_NAME, _canonical_json(record))
        mark = token
    return mark


def _commit_fenced(store, binding):
    """Commit this publication as never-to-run: its JID index, then its terminal fenced
    receipt. The caller holds the request lock and index.lock and found no evidence."""
    _write_jid_index(store, binding)
    receipt = _fenced_receipt(binding)
    store.write_atomic(_req_name(binding["request_id"]), _encode_receipt(receipt))
    return receipt


def _commit_terminal(store, binding, status, passed, total):
    receipt = _summary_receipt(binding, status, passed, total)
    data = _encode_receipt(receipt)
    kind, value = _read_request(store, binding["request_id"])
    if kind is not None:  # must still be our own running record
        if kind != "running":
            raise _StoreError("request record changed during the run", _req_name(binding["request_id"]))
        _check_binding(value, binding)
    store.write_atomic(_req_name(binding["request_id"]), data)
    return receipt


def _execute(binding, high):
    """Run the state function under the shield; returns the raw return (never leaves)."""
    kwargs = {"test": False, "queue": False, "concurrent": False, "state_events": False}
    with _Shield(_opt("cachedir")):
        if binding["profile"] == "custom":
            return __salt__["state.high"](json.loads(json.dumps(high)), **kwargs)  # noqa: F821
        if high.get("highstate") is True:
            # state.apply with no argument: the top file. highstate.cache.p (written by
            # salt.state.BaseHighState.call_highstate through salt.utils.files.fopen, checked by
            # _validate_run) is a *.cache.p of the cachedir: the shield sinks it like sls.p.
            return __salt__["state.apply"](**kwargs)  # noqa: F821
        return __salt__["state.apply"](",".join(high["sls"]), **kwargs)  # noqa: F821


def run(request_id, profile, state_data_json="", fence_token=None, profile_table=None, proof_nonce=None,
        **kwargs):
    """
    Run one managed apply for a request, bound to this publication's JID, and return its
    durable receipt. Published by the Oduflow dispatcher with a preassigned JID and a fence
    token (a positive integer, strictly increasing per client): a token not above this
    minion's high-water mark is refused with a terminal fenced receipt and nothing runs.

    With ``proof_nonce`` (32 to 64 lowercase hex digits, the dispatcher's fresh nonce for this
    publication; capability ``proof.run_return``) a terminal receipt (succeeded or failed) is
    returned signed exactly as ``attest`` would sign it over that nonce: ``{"receipt":
    <receipt>, "alg": "rsa-pkcs1v15-sha256", "sig": "<base64>"}``, so the dispatcher needs no
    attest call. Any other answer (running, unknown), or a minion that cannot sign at that
    moment (its key does not load, the backend raises), returns the receipt unsigned; the
    dispatcher then asks ``attest``. (A minion with no crypto backend at all fails the runtime
    guard's crypto check: run refuses before anything runs.)

    CLI Example:

    .. code-block:: bash

        salt client-<uuid> oduflow_job.run <request-uuid> configure fence_token=7
    """
    binding, high = _validate_run(request_id, profile, state_data_json, kwargs, profile_table)
    token = _fence_token(fence_token)
    if token is None and not _unfenced_allowed():
        raise _Refused("oduflow_job: a fence token is required (minion option "
                       + _ALLOW_UNFENCED_OPTION + " is not True)")
    if proof_nonce is not None and not (isinstance(proof_nonce, str) and _NONCE_RE.match(proof_nonce)):
        raise _Refused("oduflow_job: invalid proof nonce (32 to 64 lowercase hex digits)")
    guard = _runtime_guard(binding["jid"])
    if guard is not None:
        raise _Refused("oduflow_job: refusing to run unprotected: " + guard)
    return _signed_run_return(_run(binding, high, token), proof_nonce)


def _signed_run_return(receipt, nonce):
    """The run's return: its terminal receipt signed over the dispatcher's nonce (as attest signs
    the same receipt), else the receipt as it is. Signing never fails the run: the receipt is
    committed already, and the dispatcher proves it with attest instead."""
    if nonce is None or receipt.get("status") not in ("succeeded", "failed"):
        return receipt
    try:
        return _prove(nonce, receipt)
    except Exception as exc:  # pylint: disable=broad-except
        log.warning("oduflow_job: run receipt returned unsigned (%s); the dispatcher asks attest",
                    type(exc).__name__)
        return receipt


def _run(binding, high, token):
    """The locked part of run: the receipt of this publication (run now, or found)."""
    request_id = binding["request_id"]
    with _Store(_receipt_dir(), create=True) as store:
        req_lock = store.try_lock(_req_lock_name(request_id), patience=_REQUEST_LOCK_PATIENCE)
        if req_lock is None:  # a live worker already runs this request
            _set_retcode(0)
            return _summary_receipt(binding, "running")
        try:
            existing = _existing_evidence(store, binding)
            if existing is not None:
                _set_retcode(0)
                return existing
            exec_lock = _claim(store, binding, token)
            if not isinstance(exec_lock, int):
                _set_retcode(0)
                return exec_lock  # fenced, or refused because another apply runs: nothing ran
            try:
                store.write_atomic(_req_name(binding["request_id"]), _canonical_json(_record("running", binding)))
                try:
                    ret = _execute(binding, high)
                    status, passed, total = _reduce(ret)
                except Exception:  # pylint: disable=broad-except
                    log.error("oduflow_job: state execution raised; the receipt is unknown")
                    status, passed, total = "unknown", 0, 0
                ret = None
            finally:
                # The state work is over: the next apply may start. The request lock, still
                # held, covers the commit, so a status answer that reads this terminal receipt
                # never races a new request into the execution lock.
                _release(exec_lock)
            receipt = _commit_terminal(store, binding, status, passed, total) if status != "unknown" else None
            if receipt is None:
                # No trustworthy result: leave the running record; with the lock free it
                # reads as unknown, and nothing can replay it.
                receipt = _summary_receipt(binding, "unknown")
            _set_retcode(0)
            return receipt
        finally:
            _release(req_lock)


def _claim(store, binding, token):
    """Under index.lock (with the request lock held and no evidence found): the high-water mark
    is read for every run (an untrusted fence record raises); a token not above it, or no token
    once a mark exists (the legacy mode), commits a fenced receipt; a busy minion (another apply holds the
    execution lock) commits a failed 0/1 receipt; otherwise the raised mark and then the JID
    index are committed, durably, before any state work. Returns the held execution lock's
    descriptor, or the receipt of a request that will never run."""
    lock = store.lock_blocking("index.lock")
    refused = None
    try:
        # Fail closed: the mark is read for every run, with a token or without (the legacy mode);
        # a record that cannot be trusted raises here, before any state work. A run without a
        # token once the minion has a mark is fenced, exactly like a stale token.
        mark = _read_fence(store, binding["minion_id"])
        if token is None and mark > 0 or token is not None and token <= mark:
            return _commit_fenced(store, binding)
        exec_lock = store.try_lock("exec.lock")
        if exec_lock is None:
            # Another managed apply runs on this minion: this request fails without any
            # state work, and says so durably (a preflight receipt, 0 of 1).
            _write_jid_index(store, binding)
            refused = True
        else:
            try:
                if token is not None:
                    _raise_fence(store, binding["minion_id"], token)
                _write_jid_index(store, binding)
            except BaseException:
                _release(exec_lock)
                raise
    finally:
        _release(lock)
    if refused:
        return _commit_terminal(store, binding, "failed", 0, 1)
    return exec_lock


def fence(request_id, jid, profile, token):
    """
    Fence one publication: raise this minion's high-water mark to at least token, and make
    the publication (request_id, jid) never-to-run: without local evidence of it, commit its
    terminal fenced receipt (failed 0/0, "code": "fenced"); if its run already started or
    finished, answer its receipt unchanged (running, unknown or terminal), exactly as
    status would. Idempotent; serialized with run and status by the same locks.

    CLI Example:

    .. code-block:: bash

        salt client-<uuid> oduflow_job.fence <request-uuid> '"<jid>"' configure 7
    """
    minion_id = _opt("id")
    if not _own_minion_id(minion_id):
        raise _Refused("oduflow_job: this minion's id is outside the id policy")
    if not _is_uuid(request_id):
        raise _Refused("oduflow_job: invalid request id")
    if not _is_jid(jid):
        raise _Refused("oduflow_job: invalid jid")
    if not _holds_profile(profile):
        raise _Refused("oduflow_job: unknown profile")
    token = _fence_token(token)
    if token is None:
        raise _Refused("oduflow_job: invalid fence token (an integer from 1 to 2^53-1)")
    want = {"minion_id": minion_id, "request_id": request_id, "jid": jid, "profile": profile}
    with _Store(_receipt_dir(), create=True) as store:
        lock = store.lock_blocking("index.lock")
        try:
            _raise_fence(store, minion_id, token)
        finally:
            _release(lock)
        req_lock = store.try_lock(_req_lock_name(request_id), patience=_REQUEST_LOCK_PATIENCE)
        if req_lock is None:  # a live worker runs this request: answer as status does
            return status(request_id, jid, profile)
        try:
            phase, value, digest = _status_evidence(store, request_id, jid, want)
            if phase == "terminal":
                return value
            if phase is not None:  # started, and its worker is gone (we hold its lock)
                return _summary_receipt(dict(want, state_digest=digest), "unknown")
            lock = store.lock_blocking("index.lock")
            try:
                return _commit_fenced(store, dict(want, state_digest=""))
            finally:
                _release(lock)
        finally:
            _release(req_lock)


def status(request_id, jid, profile):
    """
    Report a request's receipt from local evidence only.

    CLI Example:

    .. code-block:: bash

        salt client-<uuid> oduflow_job.status <request-uuid> '"<jid>"' configure
    """
    minion_id = _opt("id")
    if not _own_minion_id(minion_id):
        raise _Refused("oduflow_job: this minion's id is outside the id policy")
    if not _is_uuid(request_id):
        raise _Refused("oduflow_job: invalid request id")
    if not _is_jid(jid):
        raise _Refused("oduflow_job: invalid jid")
    if not _holds_profile(profile):
        raise _Refused("oduflow_job: unknown profile")
    want = {"minion_id": minion_id, "request_id": request_id, "jid": jid, "profile": profile}
    binding = dict(want, state_digest="")
    with _Store(_receipt_dir(), create=False) if _dir_exists(_receipt_dir()) else _NoStore() as store:
        if store is None:
            return _summary_receipt(binding, "not_started")
        # A worker can start or finish between reading the records and probing the lock
        # (it commits its terminal receipt, then releases the lock). So: read, probe, read
        # again, and decide on the second reading. Partial evidence is abandoned (unknown)
        # only when the same partial evidence was already there before a probe that found
        # the lock free; evidence that keeps moving belongs to a live worker.
        for _attempt in range(_STATUS_READS):
            before, value, _digest = _status_evidence(store, request_id, jid, want)
            if before == "terminal":
                return value  # immutable: no probe needed
            locked = store.is_locked(_req_lock_name(request_id))
            after, value, digest = _status_evidence(store, request_id, jid, want)
            if after == "terminal":
                return value
            if after is None:
                return _summary_receipt(binding, "not_started")
            binding["state_digest"] = digest
            if locked:
                return _summary_receipt(binding, "running")
            if before == after:
                return _summary_receipt(binding, "unknown")
        return _summary_receipt(binding, "running")


def _status_evidence(store, request_id, jid, want):
    """The local phase of a request for status(): (phase, value, state_digest) with phase
    None (no evidence), "claimed" (JID index only), "running" (running record) or
    "terminal" (value is the exact receipt). Bindings are checked on every reading."""
    kind, value = _read_request(store, request_id)
    index = _read_jid_index(store, jid)
    if index is not None:
        _check_binding(index, want)
    if kind is not None:
        _check_binding(value, want)
        return kind, value, value["state_digest"]
    if index is not None:
        return "claimed", None, index["state_digest"]
    return None, None, ""


def _dir_exists(path):
    try:
        os.lstat(path)
        return True
    except OSError as exc:
        return exc.errno != errno.ENOENT


class _NoStore(object):
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------------------------------
# Receipt proofs
# ---------------------------------------------------------------------------------------


class _ProofUnavailable(CommandExecutionError):
    """This minion cannot sign (no Salt crypto backend, or its key does not load)."""


def _salt_crypt():
    return importlib.import_module("salt.crypt")


def _proof_backend(crypt):
    """The RSA backend salt.crypt imported on this minion: "m2crypto", "cryptodome", "crypto",
    "cryptography", or None. Salt 3006 prefers M2Crypto, then Cryptodome, then Crypto; later
    Salt releases use cryptography."""
    if getattr(crypt, "HAS_M2", False):
        return "m2crypto"
    rsa = getattr(crypt, "RSA", None)
    if getattr(crypt, "HAS_CRYPTO", False) and rsa is not None:
        package = getattr(rsa, "__name__", "").split(".")[0]
        if package in ("Cryptodome", "Crypto"):
            return package.lower()
    if getattr(crypt, "HAS_CRYPTOGRAPHY", False) or (
        getattr(crypt, "padding", None) is not None and getattr(crypt, "hashes", None) is not None
    ):
        return "cryptography"
    return None


def _minion_key_path():
    pki_dir = _opt("pki_dir")
    if not isinstance(pki_dir, str) or not pki_dir:
        raise _ProofUnavailable("oduflow_job: no pki_dir")
    return os.path.join(pki_dir, "minion.pem")


def _proof_message(nonce, answer):
    return _PROOF_PREFIX + nonce.encode("ascii") + b"\n" + _canonical_json(answer)


def _sign(crypt, backend, key, message):
    """RSA PKCS#1 v1.5 over SHA-256 of message, through salt.crypt's own backend (never
    salt.crypt.sign_message, which hashes with SHA-1)."""
    if backend == "m2crypto":
        md = crypt.EVP.MessageDigest("sha256")
        md.update(message)
        return key.sign(md.final(), "sha256")
    if backend in ("cryptodome", "crypto"):
        sha256 = importlib.import_module(("Cryptodome" if backend == "cryptodome" else "Crypto") + ".Hash.SHA256")
        return crypt.PKCS1_v1_5.new(key).sign(sha256.new(message))
    if backend == "cryptography":
        hashes = getattr(crypt, "hashes", None) or importlib.import_module("cryptography.hazmat.primitives.hashes")
        padding = getattr(crypt, "padding", None) or importlib.import_module(
            "cryptography.hazmat.primitives.asymmetric.padding"
        )
        raw = key if hasattr(key, "private_numbers") else getattr(key, "key", key)  # Salt may wrap it
        return raw.sign(message, padding.PKCS1v15(), hashes.SHA256())
    raise _ProofUnavailable("oduflow_job: no crypto backend in salt.crypt")


def _load_signer(crypt=None):
    """(crypt, backend, key): the minion's private key loaded the way Salt loads it."""
    crypt = crypt if crypt is not None else _salt_crypt()
    backend = _proof_backend(crypt)
    if backend is None:
        raise _ProofUnavailable("oduflow_job: no crypto backend in salt.crypt")
    key = crypt.get_rsa_key(_minion_key_path(), _opt("key_pass"))
    if key is None:
        raise _ProofUnavailable("oduflow_job: the minion key did not load")
    return crypt, backend, key


def _proof_capability():
    try:
        _crypt, backend, _key = _load_signer()
    except Exception as exc:  # pylint: disable=broad-except
        return {"alg": _PROOF_ALG, "ready": False, "backend": "",
                "error": type(exc).__name__, "run_return": True}
    return {"alg": _PROOF_ALG, "ready": True, "backend": backend, "error": "", "run_return": True}


def _prove(nonce, answer, crypt=None):
    crypt, backend, key = _load_signer(crypt)
    sig = _sign(crypt, backend, key, _proof_message(nonce, answer))
    return {"receipt": answer, "alg": _PROOF_ALG, "sig": base64.b64encode(bytes(sig)).decode("ascii")}


def attest(request_id, jid, profile, nonce):
    """
    The answer of status(request_id, jid, profile), signed with this minion's Salt key over
    the master's nonce: {"receipt": <answer>, "alg": "rsa-pkcs1v15-sha256", "sig": <base64>}.
    Read-only, like status.

    CLI Example:

    .. code-block:: bash

        salt client-<uuid> oduflow_job.attest <request-uuid> '"<jid>"' configure <hex nonce>
    """
    if not isinstance(nonce, str) or not _NONCE_RE.match(nonce):
        raise _Refused("oduflow_job: invalid nonce (32 to 64 lowercase hex digits)")
    answer = status(request_id, jid, profile)
    return _prove(nonce, answer)
