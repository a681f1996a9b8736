#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""
A stand-in Salt minion runtime for oduflow_job.py, standard library only.

It loads the real module with stand-ins for Salt's loader globals (__opts__, __salt__,
__pillar__, __grains__, __context__) and a small fake ``salt`` package: ``salt.version``
presents a verified version, and ``salt.utils.files.fopen``, ``salt.state.State`` and
``salt.modules.state`` carry the signatures the module's runtime guard checks. The fake
state functions behave like Salt's where it matters for protocol 1: ``state.apply`` writes
``sls.p`` and ``highstate.cache.p`` through ``salt.utils.files.fopen`` and fires
``State.event`` for every state (both must be intercepted by the module), and every real
execution appends one line to the minion's side-effect marker file.

Used two ways:

* as a process (``python3 host.py --base DIR [--config FILE]``) serving JSON lines on
  stdin/stdout: ``{"id", "minion_id", "fun", "args", "kwargs", "jid"}`` ->
  ``{"id", "return", "retcode"}``. Every request runs in its own forked process, like a
  multiprocessing minion's job, so the module's file locks are exercised across processes.
  One host serves any number of minion ids; minion M lives in ``DIR/minions/M/`` with
  ``receipts/`` (oduflow_receipt_dir), ``cache/`` (cachedir), ``marker`` and ``events``.
  Host functions: ``host.ping``, ``host.marker`` (the marker lines of minion_id) and
  ``host.kill`` (SIGKILL the job process serving request id args[0]).
  Each minion's Salt key pair is ``DIR/minions/M/pki/minion.pem`` (its ``pki_dir``), written
  by the harness; ``salt.crypt`` is a stand-in with the backend Salt would have imported
  (config ``crypto_backend``: "cryptodome", "m2crypto", "cryptography", "none", or "auto"
  for the first one installed, in Salt 3006's order of preference after M2Crypto:
  Cryptodome, M2Crypto, cryptography).
* as a library by the unit tests (install_fake_salt, load_module, call).

Config (JSON): {"salt_version": "3006.0", "multiprocessing": true,
  "results": {"roles.client_stack": <state return>, ...}, "delay": {"<role>|custom": s},
  "raise": ["<role>|custom", ...], "parallel": ["<role>", ...], "pillar": {...},
  "opts": {...extra minion options}, "crypto_backend": "auto"}
"""

import inspect
import json
import linecache
import multiprocessing
import os
import re
import selectors
import signal
import sys
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_FILE = os.path.join(HERE, "oduflow_job.py")

_SAFE_MINION = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
_KWARG_RE = re.compile(r"^([^\d\W][\w.-]*)=(?!=)(.*)$", re.UNICODE)


def _state(name, result, run_num):
    return {
        "name": name,
        "changes": {},
        "result": result,
        "comment": "Success!" if result is True else "Failure!",
        "__sls__": "fixture",
        "__run_num__": run_num,
        "start_time": "00:00:00.000000",
        "duration": 1.0,
        "__id__": name,
    }


def default_results():
    """The fixture returns: client_stack 3/3 true, client_production 2/3, others all true."""

    def ret(role, results):
        out = {}
        for i, result in enumerate(results):
            name = "{}_step_{}".format(role.split(".")[-1], i)
            out["test_|-{0}_|-{0}_|-succeed_without_changes".format(name)] = _state(name, result, i)
        return out

    return {
        "roles.client_stack": ret("roles.client_stack", [True, True, True]),
        "roles.client_production": ret("roles.client_production", [True, False, True]),
        "roles.client_storage_resize": ret("roles.client_storage_resize", [True, True]),
        "roles.client_credentials": ret("roles.client_credentials", [True, True]),
        # a profile table's states: an sls list is applied as one state.apply a,b; the highstate
        # (state.apply with no argument) has the key "highstate"
        "roles.webserver,roles.monitoring": ret("roles.webserver", [True, True, True, True]),
        "highstate": ret("highstate", [True, True, True, True, True]),
    }


# The per-process behaviour of the fake Salt. Tests may change it (and add a "hook":
# a callable(phase, info) invoked inside the fake state functions).
BEHAVIOR = {
    "salt_version": "3006.0",
    "results": default_results(),
    "delay": {},
    "raise": [],
    "parallel": [],
    "hook": None,
}

# The current job (set by load_module/call in the job process).
CURRENT = {"opts": None, "jid": None, "marker": None, "events": None}


# ---------------------------------------------------------------------------------------
# Fake salt package
# ---------------------------------------------------------------------------------------


class CommandExecutionError(Exception):
    """salt.exceptions.CommandExecutionError stand-in."""


def fake_fopen(*args, **kwargs):
    kwargs.pop("binary", None)
    return open(*args, **kwargs)  # noqa: the real fopen wraps open() as well


# The fake salt.state module, as source text (registered with linecache under a pseudo file
# name, so inspect.getsource works on it as on Salt's own salt/state.py): the module's runtime
# guard scans it and finds the event bus reached only from State.event and processes started
# only from State.call_parallel, as in Salt 3006 and later.
FAKE_STATE_FILE = "<oduflow fake salt/state.py>"
FAKE_STATE_SOURCE = """
import json
import os


class BaseHighState(object):
    \"\"\"salt.state.BaseHighState stand-in: the highstate writes its compiled cache like Salt's.\"\"\"

    def __init__(self, opts):
        self.opts = opts

    def call_highstate(self, high, cache_name="highstate"):
        import salt.utils.files

        cfn = os.path.join(self.opts["cachedir"], "{}.cache.p".format(cache_name))
        with salt.utils.files.fopen(cfn, "w+b") as fp_:
            fp_.write(json.dumps(high).encode())


class State(object):
    \"\"\"salt.state.State stand-in with the verified method signatures.\"\"\"

    def __init__(self, opts, pillar_override=None, jid=None, **kwargs):
        self.opts = opts
        self.jid = jid

    def event(self, chunk_ret, length, fire_event=False):
        # The real one publishes the raw chunk result on the event bus.
        _bus.fire_event({"jid": self.jid, "len": length, "ret": chunk_ret})

    @classmethod
    def _call_parallel_target(cls, instance, cdata, low):
        # The real one runs in a new process and writes the raw result below cachedir/<jid>/.
        troot = os.path.join(instance.opts["cachedir"], str(instance.jid))
        os.makedirs(troot, exist_ok=True)
        with open(os.path.join(troot, "parallel"), "w") as handle:
            handle.write(json.dumps(low))

    def call_parallel(self, cdata, low):
        self._call_parallel_target(self, cdata, low)
        return {"name": low.get("name"), "result": None, "changes": {}, "comment": "Started"}
"""

# Salt 3006.10 and 3007.2 on (Salt c4361cf828): call_parallel takes the injected globals, and
# State.call passes them positionally. The same fake otherwise.
FAKE_STATE_SOURCE_INJECT_GLOBALS = FAKE_STATE_SOURCE.replace(
    "    def call_parallel(self, cdata, low):\n",
    "    def call_parallel(self, cdata, low, inject_globals):\n",
)
assert FAKE_STATE_SOURCE_INJECT_GLOBALS != FAKE_STATE_SOURCE


def state_source_for(version):
    """The fake salt.state of a Salt release: the inject_globals form of call_parallel from
    3006.10 and 3007.2 on (and every later line), the original form before."""
    match = re.match(r"\A([0-9]+)(?:\.([0-9]+))?", version or "")
    if not match:
        return FAKE_STATE_SOURCE
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    if (major == 3006 and minor >= 10) or (major == 3007 and minor >= 2) or major >= 3008:
        return FAKE_STATE_SOURCE_INJECT_GLOBALS
    return FAKE_STATE_SOURCE


class _FakeBus(object):
    """Where the fake State.event publishes: the minion's events file."""

    @staticmethod
    def fire_event(data):
        with open(CURRENT["events"], "a") as handle:
            handle.write(json.dumps(data) + "\n")


def fake_state_module(source=FAKE_STATE_SOURCE, filename=FAKE_STATE_FILE):
    """A fresh fake salt.state module built from source (tests pass altered sources)."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    m = types.ModuleType("salt.state")
    m.__file__ = filename
    m._bus = _FakeBus
    exec(compile(source, filename, "exec"), m.__dict__)  # pylint: disable=exec-used
    return m


def fake_load_args_and_kwargs(func, args, data=None, ignore_invalid=False):
    """salt.minion.load_args_and_kwargs: __kwarg__ dicts and name=value strings become keyword
    arguments, and a function with **kwargs receives the publication data as __pub_<key>."""
    out_args, out_kwargs = split_args(args, {})
    params = inspect.signature(func).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in params) and isinstance(data, dict):
        for key, val in data.items():
            out_kwargs["__pub_" + key] = val
    return out_args, out_kwargs


def _side_effect(fun, target):
    line = "{} {} {} {}\n".format(CURRENT["jid"], fun, target, os.getpid())
    fd = os.open(CURRENT["marker"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _behave(key, fun, info):
    hook = BEHAVIOR.get("hook")
    if hook:
        hook("before", info)
    delay = BEHAVIOR.get("delay", {}).get(key)
    if delay:
        time.sleep(delay)
    if key in BEHAVIOR.get("raise", []):
        raise RuntimeError("fixture state exception")


def _run_chunks(ret, key):
    st = sys.modules["salt.state"].State(CURRENT["opts"], jid=CURRENT["jid"])
    out = {}
    for i, (tag, chunk) in enumerate(sorted(ret.items())):
        if isinstance(chunk, dict) and key in BEHAVIOR.get("parallel", []):
            try:
                cdata, low = {"args": [], "kwargs": {}}, {"name": tag, "parallel": True}
                if "inject_globals" in inspect.signature(st.call_parallel).parameters:
                    chunk = st.call_parallel(cdata, low, {"__env__": "base"})  # as State.call does
                else:
                    chunk = st.call_parallel(cdata, low)
            except Exception as exc:  # pylint: disable=broad-except  (as State.call does)
                chunk = {"name": tag, "result": False, "changes": {}, "comment": str(exc)}
        if isinstance(chunk, dict):
            st.event(chunk, len(ret))
        out[tag] = chunk
    return out


def fake_sls(mods, test=None, exclude=None, queue=None, sync_mods=None, state_events=None, **kwargs):
    _side_effect("state.apply", mods)
    _behave(mods, "state.apply", {"mods": mods, "test": test, "queue": queue,
                                  "state_events": state_events, "kwargs": kwargs})
    ret = BEHAVIOR["results"].get(mods)
    if ret is None:
        ret = ["No matching sls found for '{}' in env 'base'".format(mods)]
    if isinstance(ret, dict):
        ret = _run_chunks(json.loads(json.dumps(ret)), mods)
    cache_file = os.path.join(CURRENT["opts"]["cachedir"], "sls.p")
    with salt.utils.files.fopen(cache_file, "w+b") as fp_:
        fp_.write(json.dumps(ret).encode())
    cfn = os.path.join(CURRENT["opts"]["cachedir"], "highstate.cache.p")
    with salt.utils.files.fopen(cfn, "w+b") as fp_:
        fp_.write(json.dumps({"mods": mods}).encode())
    return ret


def fake_apply(mods=None, **kwargs):
    if mods is None:
        return fake_highstate(**kwargs)
    return fake_sls(mods, **kwargs)


def fake_highstate(test=None, queue=None, state_events=None, **kwargs):
    """state.apply with no argument: the top file's states; the compiled cache goes through
    salt.state.BaseHighState.call_highstate (salt.utils.files.fopen), as in Salt."""
    _side_effect("state.apply", "highstate")
    _behave("highstate", "state.apply", {"mods": None, "test": test, "queue": queue,
                                         "state_events": state_events, "kwargs": kwargs})
    ret = BEHAVIOR["results"].get("highstate")
    if isinstance(ret, dict):
        ret = _run_chunks(json.loads(json.dumps(ret)), "highstate")
    sys.modules["salt.state"].BaseHighState(CURRENT["opts"]).call_highstate({"top": "fixture"})
    return ret


def fake_high(data, test=None, queue=None, **kwargs):
    _side_effect("state.high", ",".join(sorted(data)))
    _behave("custom", "state.high", {"data": data, "test": test, "queue": queue, "kwargs": kwargs})
    ret = {}
    for i, sid in enumerate(sorted(data)):
        body = data[sid]
        for mod, decl in body.items():
            if mod.startswith("__"):
                continue
            fun = decl[0] if decl and isinstance(decl[0], str) else "?"
            result = fun != "fail_without_changes"
            ret["{}_|-{}_|-{}_|-{}".format(mod, sid, sid, fun)] = _state(sid, result, i)
    return _run_chunks(ret, "custom")


CRYPTO_BACKENDS = ("cryptodome", "m2crypto", "cryptography")


def backend_available(name):
    try:
        if name == "cryptodome":
            import Cryptodome.PublicKey.RSA  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
        elif name == "m2crypto":
            import M2Crypto  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
        elif name == "cryptography":
            import cryptography.hazmat.primitives.serialization  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
        else:
            return False
    except ImportError:
        return False
    return True


def fake_crypt(backend="auto"):
    """A module shaped like salt.crypt for one backend: its HAS_* flags, the names it imports
    and get_rsa_key loading the key as Salt 3006 does (later Salt: cryptography)."""
    if backend == "auto":
        backend = next((b for b in CRYPTO_BACKENDS if backend_available(b)), "none")
    m = types.ModuleType("salt.crypt")
    m.HAS_M2 = False
    m.HAS_CRYPTO = False
    if backend == "m2crypto":
        from M2Crypto import BIO, EVP, RSA  # pylint: disable=import-outside-toplevel

        m.HAS_M2, m.BIO, m.EVP, m.RSA = True, BIO, EVP, RSA
        m.get_rsa_key = lambda path, passphrase: RSA.load_key(path, lambda x: bytes(passphrase))
    elif backend == "cryptodome":
        from Cryptodome.PublicKey import RSA  # pylint: disable=import-outside-toplevel
        from Cryptodome.Signature import PKCS1_v1_5  # pylint: disable=import-outside-toplevel

        m.HAS_CRYPTO, m.RSA, m.PKCS1_v1_5 = True, RSA, PKCS1_v1_5

        def get_rsa_key(path, passphrase):
            with open(path) as handle:
                return RSA.importKey(handle.read(), passphrase)

        m.get_rsa_key = get_rsa_key
    elif backend == "cryptography":
        from cryptography.hazmat.primitives import hashes, serialization  # pylint: disable=import-outside-toplevel
        from cryptography.hazmat.primitives.asymmetric import padding  # pylint: disable=import-outside-toplevel

        m.HAS_CRYPTOGRAPHY, m.hashes, m.serialization, m.padding = True, hashes, serialization, padding

        def get_rsa_key(path, passphrase):
            with open(path, "rb") as handle:
                return serialization.load_pem_private_key(handle.read(), password=passphrase)

        m.get_rsa_key = get_rsa_key
    else:
        def get_rsa_key(path, passphrase):
            raise RuntimeError("no crypto backend")

        m.get_rsa_key = get_rsa_key
    m.BACKEND = backend
    return m


def install_fake_salt(version=None):
    """Put the fake salt package into sys.modules (replacing any earlier fake)."""
    if version is not None:
        BEHAVIOR["salt_version"] = version

    def mod(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    class _Version(object):
        @property
        def string(self):
            return BEHAVIOR["salt_version"]

        def __str__(self):
            return self.string

    salt = mod("salt", __path__=[])
    globals()["salt"] = salt  # the fake state functions reach salt.utils.files as Salt's do
    salt.version = mod("salt.version", __saltstack_version__=_Version())
    salt.exceptions = mod("salt.exceptions", CommandExecutionError=CommandExecutionError)
    salt.utils = mod("salt.utils", __path__=[])
    salt.utils.files = mod("salt.utils.files", fopen=fake_fopen)
    salt.state = fake_state_module(state_source_for(BEHAVIOR["salt_version"]))
    sys.modules["salt.state"] = salt.state
    salt.minion = mod("salt.minion", load_args_and_kwargs=fake_load_args_and_kwargs)
    salt.crypt = fake_crypt(BEHAVIOR.get("crypto_backend", "auto"))
    sys.modules["salt.crypt"] = salt.crypt
    salt.modules = mod("salt.modules", __path__=[])
    salt.modules.state = mod("salt.modules.state", sls=fake_sls, apply_=fake_apply, high=fake_high)
    return salt


# ---------------------------------------------------------------------------------------
# Loading the module for one minion
# ---------------------------------------------------------------------------------------


def minion_paths(base, minion_id):
    if not _SAFE_MINION.match(minion_id or ""):
        raise ValueError("unsafe minion id for the host")
    root = os.path.join(base, "minions", minion_id)
    return {
        "root": root,
        "receipts": os.path.join(root, "receipts"),
        "cache": os.path.join(root, "cache"),
        "marker": os.path.join(root, "marker"),
        "events": os.path.join(root, "events"),
        "pki": os.path.join(root, "pki"),
    }


def load_module(base, minion_id, config=None, code=None):
    """A fresh oduflow_job module object for minion_id with stand-in loader globals."""
    config = config or {}
    paths = minion_paths(base, minion_id)
    os.makedirs(paths["cache"], mode=0o700, exist_ok=True)
    opts = {
        "id": minion_id,
        "cachedir": paths["cache"],
        "multiprocessing": config.get("multiprocessing", True),
        "oduflow_receipt_dir": paths["receipts"],
        "pki_dir": paths["pki"],
    }
    opts.update(config.get("opts", {}))
    CURRENT.update(opts=opts, marker=paths["marker"], events=paths["events"])
    if code is None:
        with open(MODULE_FILE, "rb") as handle:
            code = compile(handle.read(), MODULE_FILE, "exec")
    module = types.ModuleType("salt.loaded.ext.module.oduflow_job")
    module.__file__ = MODULE_FILE
    module.__opts__ = opts
    module.__salt__ = {"state.apply": fake_apply, "state.high": fake_high}
    module.__pillar__ = config.get("pillar", {})
    module.__grains__ = {"saltversion": BEHAVIOR["salt_version"], "id": minion_id}
    module.__context__ = {}
    exec(code, module.__dict__)  # pylint: disable=exec-used
    return module


def split_args(args, kwargs):
    """Salt's load_args_and_kwargs for a function with **kwargs."""
    out_args, out_kwargs = [], {}
    for arg in args or []:
        if isinstance(arg, dict) and arg.get("__kwarg__") is True:
            out_kwargs.update({k: v for k, v in arg.items() if k != "__kwarg__"})
            continue
        if isinstance(arg, str):
            match = _KWARG_RE.match(arg)
            if match:
                out_kwargs[match.group(1)] = match.group(2)
                continue
        out_args.append(arg)
    out_kwargs.update(kwargs or {})
    return out_args, out_kwargs


def call(module, fun, args=None, kwargs=None, jid=None):
    """Call module function `fun` (short name) like a minion job. Returns (return, retcode)."""
    CURRENT["jid"] = jid
    func = getattr(module, fun, None)
    if fun.startswith("_") or not callable(func):
        return "'oduflow_job.{}' is not available.".format(fun), 254
    # As the minion does: a function with **kwargs receives the publication metadata.
    pub = {"jid": jid, "fun": "oduflow_job." + fun, "arg": list(args or []),
           "tgt": module.__opts__["id"], "tgt_type": "list", "ret": "", "user": "root"}
    call_args = list(args or []) + ([dict(kwargs, __kwarg__=True)] if kwargs else [])
    out_args, out_kwargs = fake_load_args_and_kwargs(func, call_args, pub)
    module.__context__.pop("retcode", None)
    # A minion with multiprocessing: True runs each job in its own process with this name.
    process = multiprocessing.current_process()
    saved_name = process.name
    process.name = "ProcessPayload(jid={})".format(jid if jid else "0" * 20)
    try:
        ret = func(*out_args, **out_kwargs)
    except CommandExecutionError as exc:
        return "ERROR: {}".format(exc), 1
    except TypeError as exc:
        return "Passed invalid arguments: {}".format(exc), 1
    except Exception as exc:  # pylint: disable=broad-except
        return "The minion function caused an exception: {}".format(type(exc).__name__), 1
    finally:
        process.name = saved_name
    return ret, module.__context__.get("retcode", 0)


# ---------------------------------------------------------------------------------------
# JSON-lines server, fork per request
# ---------------------------------------------------------------------------------------


def _serve_one(request, base, config, code):
    fun = request.get("fun") or ""
    minion_id = request.get("minion_id") or ""
    if fun == "host.ping":
        return "pong", 0
    if fun == "host.marker":
        path = minion_paths(base, minion_id)["marker"]
        try:
            with open(path) as handle:
                return handle.read().splitlines(), 0
        except FileNotFoundError:
            return [], 0
    if not fun.startswith("oduflow_job."):
        return "'{}' is not available.".format(fun), 254
    module = load_module(base, minion_id, config, code)
    return call(module, fun[len("oduflow_job."):], request.get("args"), request.get("kwargs"),
                request.get("jid"))


def _child(request, base, config, code, wfd):
    try:
        try:
            ret, retcode = _serve_one(request, base, config, code)
        except Exception as exc:  # pylint: disable=broad-except
            ret, retcode = "host error: {}".format(type(exc).__name__), 254
        data = json.dumps({"id": request.get("id"), "return": ret, "retcode": retcode})
        view = memoryview((data + "\n").encode())
        while view:
            view = view[os.write(wfd, view):]
    finally:
        os._exit(0)


def serve(base, config):
    os.makedirs(base, mode=0o700, exist_ok=True)
    BEHAVIOR["crypto_backend"] = config.get("crypto_backend", "auto")
    install_fake_salt(config.get("salt_version"))
    if "results" in config:
        BEHAVIOR["results"].update(config["results"])
    for key in ("delay", "raise", "parallel"):
        if key in config:
            BEHAVIOR[key] = config[key]
    with open(MODULE_FILE, "rb") as handle:
        code = compile(handle.read(), MODULE_FILE, "exec")
    sel = selectors.DefaultSelector()
    stdin = sys.stdin.fileno()
    sel.register(stdin, selectors.EVENT_READ, ("stdin", None))
    pending = b""
    children = 0
    stdin_open = True
    out = sys.stdout.buffer

    def respond(obj):
        out.write((json.dumps(obj) + "\n").encode())
        out.flush()

    while stdin_open or children:
        for key, _ in sel.select():
            kind, info = key.data
            if kind == "stdin":
                chunk = os.read(stdin, 65536)
                if not chunk:
                    stdin_open = False
                    sel.unregister(stdin)
                    continue
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    if not line.strip():
                        continue
                    try:
                        request = json.loads(line.decode())
                        if not isinstance(request, dict):
                            raise ValueError
                    except ValueError:
                        respond({"id": None, "return": "host error: malformed request", "retcode": 254})
                        continue
                    if request.get("fun") == "host.kill":
                        # SIGKILL the job process serving request id args[0] (a minion restart
                        # kills running jobs); its own answer then reports the signal.
                        target = (request.get("args") or [None])[0]
                        killed = False
                        for k in list(sel.get_map().values()):
                            if k.data[0] == "child" and k.data[1][2] == target and target is not None:
                                try:
                                    os.kill(k.data[1][0], signal.SIGKILL)
                                    killed = True
                                except ProcessLookupError:
                                    pass
                        respond({"id": request.get("id"), "return": killed, "retcode": 0})
                        continue
                    rfd, wfd = os.pipe()
                    pid = os.fork()
                    if pid == 0:
                        os.close(rfd)
                        _child(request, base, config, code, wfd)
                    os.close(wfd)
                    children += 1
                    sel.register(rfd, selectors.EVENT_READ, ("child", [pid, b"", request.get("id")]))
            else:
                pid, buf, req_id = info
                chunk = os.read(key.fd, 65536)
                if chunk:
                    info[1] = buf + chunk
                    continue
                sel.unregister(key.fd)
                os.close(key.fd)
                _, wstatus = os.waitpid(pid, 0)
                children -= 1
                if info[1].endswith(b"\n"):
                    out.write(info[1])
                    out.flush()
                else:
                    sig = os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else 0
                    respond({"id": req_id, "return": "host error: job process died (signal {})".format(sig),
                             "retcode": 254})


def main(argv):
    base, config = None, {}
    i = 0
    while i < len(argv):
        if argv[i] == "--base" and i + 1 < len(argv):
            base = argv[i + 1]
            i += 2
        elif argv[i] == "--config" and i + 1 < len(argv):
            with open(argv[i + 1]) as handle:
                config = json.load(handle)
            i += 2
        else:
            sys.stderr.write("usage: host.py --base DIR [--config FILE]\n")
            return 2
    if not base or not os.path.isabs(base):
        sys.stderr.write("host.py: --base must be an absolute directory\n")
        return 2
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        serve(base, config)
    except KeyboardInterrupt:
        return 130
    except Exception:  # pylint: disable=broad-except
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
