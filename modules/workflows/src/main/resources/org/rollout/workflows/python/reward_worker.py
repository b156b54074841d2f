"""A Python reward worker: imports one module, then serves reward calls (docs/python-rewards.md).

Started by the JVM as `python -u -c <this file> MODULE`. The protocol is line-delimited JSON on the
worker's original stdin and stdout; the user's module sees /dev/null as stdin and stderr as stdout,
so its prints (at import or in a call) never reach the protocol channel.

  worker -> JVM, once:  {"ready": true, "pid": 123}  or  {"ready": false, "error": "<last traceback line>"}
  JVM -> worker:        {"id": 7, "fn": "name", "check": true}
                        {"id": 7, "fn": "name", "prompt": "...", "completion": "...",
                         "prompt_ids": [..], "completion_ids": [..], "data": {..}}
  worker -> JVM:        {"id": 7, "value": 1.0}  or  {"id": 7, "error": "<last traceback line>"}

The worker exits when its stdin closes, and when its parent process is gone.
"""

import importlib
import json
import math
import numbers
import os
import sys
import threading
import time
import traceback

# The protocol channel: private copies of the original stdin and stdout.
PROTOCOL_IN_FD = os.dup(0)
PROTOCOL_OUT_FD = os.dup(1)
_devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(_devnull, 0)
os.close(_devnull)
os.dup2(2, 1)  # C-level writes to fd 1 go to stderr too
sys.stdin = open(os.devnull)
sys.stdout = sys.stderr

_out = os.fdopen(PROTOCOL_OUT_FD, "w", encoding="utf-8", buffering=1)
_in = os.fdopen(PROTOCOL_IN_FD, "r", encoding="utf-8")


def _send(message):
    _out.write(json.dumps(message, allow_nan=False) + "\n")
    _out.flush()


def _last_line(exc):
    lines = traceback.format_exception_only(type(exc), exc)
    return lines[-1].strip() if lines else type(exc).__name__


def _watch_parent(parent):
    # A JVM killed with SIGKILL cannot close our stdin if we are inside a long call: exit when reparented.
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def _function(module, name, cache):
    fn = cache.get(name)
    if fn is None:
        if not hasattr(module, name):
            raise AttributeError("module '%s' has no attribute '%s'" % (module.__name__, name))
        fn = getattr(module, name)
        if not callable(fn):
            raise TypeError("%s.%s is not callable (%s)" % (module.__name__, name, type(fn).__name__))
        cache[name] = fn
    return fn


def _value(result):
    # Any real number: float, int, bool, numpy scalars; not strings, None, tensors, lists.
    if not isinstance(result, numbers.Real):
        raise TypeError("the reward function returned a %s, not a number" % type(result).__name__)
    value = float(result)
    if not math.isfinite(value):
        raise ValueError("the reward function returned %r, not a finite number" % value)
    return value


def main():
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    module_name = sys.argv[1]
    try:
        module = importlib.import_module(module_name)
    except BaseException as e:  # noqa: BLE001 - any import failure is reported, SystemExit included
        _send({"ready": False, "error": _last_line(e)})
        return 1
    _send({"ready": True, "pid": os.getpid()})
    cache = {}
    for line in _in:
        if not line.strip():
            continue
        request = json.loads(line)
        rid = request["id"]
        try:
            fn = _function(module, request["fn"], cache)
            if request.get("check"):
                _send({"id": rid, "value": None})
                continue
            result = fn(
                request["prompt"],
                request["completion"],
                request["prompt_ids"],
                request["completion_ids"],
                **request["data"],
            )
            _send({"id": rid, "value": _value(result)})
        except Exception as e:  # noqa: BLE001 - the call's error is the reply
            _send({"id": rid, "error": _last_line(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
