"""A Python workflow worker: runs AReaL-style workflows and agents for the engine.

Started by the engine's JVM as ``python -u -m rollout_client.areal.worker pkg.module:ClassName``.
The class is a workflow (``async def arun_episode(self, engine, data)``) or, in AReaL's agent form,
an agent (``async def run(self, data, **extra_kwargs)`` and no ``arun_episode``). Its environment:

  ROLLOUT_WORKFLOW_KWARGS   a JSON object: the constructor's keyword arguments
  ROLLOUT_WORKFLOW_GCONFIG  a JSON object of gconfig keys (absent or empty: AReaL's defaults)
  ROLLOUT_TOKENIZER_SOCKET  the engine's tokenizer socket (rollout_client/areal/tokenizer.py)

The constructor also gets ``gconfig=`` (a ``GenerationHyperparameters``) and ``tokenizer=`` (an
``EngineTokenizer``, None without the socket) when it takes them by name or has ``**kwargs``; a
``gconfig`` or ``tokenizer`` in the keyword arguments is refused. One worker runs many episodes at
once on one asyncio loop: each episode is a task; ``await engine.agenerate(req)`` in a workflow
becomes a ``generate`` message to the JVM, which runs the generation through the node's
interruptible inference engine and answers with the tokens, their log-probabilities and their
weight versions. An agent generates through the OpenAI-compatible ``base_url`` of its ``extra_kwargs``.

The protocol is line-delimited JSON on the worker's original stdin and stdout; the workflow's
module sees /dev/null as stdin and stderr as stdout, so a ``print`` never reaches the channel.

  worker -> JVM, once:  {"op": "ready", "pid": 123, "workflow": "pkg.module:ClassName",
                         "kind": "workflow" or "agent"}
                        or {"op": "refused", "error": "<why, naming the workflow>"}
  JVM -> worker:        {"op": "start", "episode": 5, "data": {...}, "is_eval": false,
                         "task_id": 17, "sample_idx": 2, "version": 3,
                         "extra_kwargs": {"base_url": "...", "api_key": "...", ...}}  (agents only)
                        {"op": "cancel", "episode": 5}            the episode's task is cancelled
                        {"op": "version", "version": 4}           what get_version() answers
                        {"op": "generated", "request": 9, "output_tokens": [..],
                         "output_logprobs": [..], "output_versions": [..], "stop_reason": "stop",
                         "latency": 0.12, "ttft": 0.01}
                        or {"op": "generated", "request": 9, "error": "<why>"}
  worker -> JVM:        {"op": "generate", "episode": 5, "request": 9, "rid": "...",
                         "input_ids": [..], "gconfig": {AReaL's GenerationHyperparameters fields}}
                        {"op": "abort", "request": 9}              the awaiting task was cancelled
                        {"op": "done", "episode": 5, "result": RESULT, "stats": {scope: {key: [..]}}}
                        {"op": "failed", "episode": 5, "error": "<last traceback line>",
                         "traceback": "<whole traceback>"}
                        {"op": "cancelled", "episode": 5}

  RESULT of a workflow: {"kind": "none"}
          {"kind": "tensors", "tensors": {name: {"dtype": "int32", "shape": [1, 12], "data": base64}}}
          {"kind": "interactions", "interactions": [{"id", "parent", "input_tokens", "output_tokens",
           "output_logprobs", "output_versions", "reward", "chat_template_type"}]}
  RESULT of an agent:   {"kind": "reward", "reward": 0.5 or null}     run returned a number or None
          {"kind": "rewards", "rewards": {completion_id: 0.5}}       run returned a dict of numbers

Tensors travel as their little-endian bytes (numpy or torch, CPU); dtypes are numpy's names. A
reward that is not finite fails its episode. The worker exits when its stdin closes, and when
its parent process is gone.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import importlib
import inspect
import json
import math
import numbers
import os
import sys
import threading
import time
import traceback
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .api import InferenceEngine, ModelRequest, ModelResponse
from .api.cli_args import GenerationHyperparameters, UnknownGenerationKeyError, from_gconfig
from .experimental.openai.types import InteractionWithTokenLogpReward
from .infra import workflow_context
from .tokenizer import SOCKET_ENV, EngineTokenizer
from .utils import stats_tracker

__all__ = [
    "WorkflowRefusedError",
    "WorkflowWorker",
    "encode_agent_result",
    "encode_result",
    "load_from_env",
    "load_workflow",
    "main",
    "workflow_kind",
]


class WorkflowRefusedError(Exception):
    """The workflow cannot be loaded: the message names it and why."""


#: Constructor arguments the worker gives from the engine's configuration, and where they come from.
INJECTED = {"gconfig": "gconfig { }", "tokenizer": "tokenizer_path"}


def workflow_kind(cls: type) -> Optional[str]:
    """``"workflow"`` for a class with ``arun_episode``, ``"agent"`` for one with only ``run``
    (AReaL's agent form: ``async def run(self, data, **extra_kwargs)``), else None."""
    if callable(getattr(cls, "arun_episode", None)):
        return "workflow"
    if callable(getattr(cls, "run", None)):
        return "agent"
    return None


def _accepted(cls: type, names: Iterable[str]) -> List[str]:
    """Those of ``names`` that ``cls``'s constructor takes by keyword, all of them with ``**kwargs``."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return list(names)
    by_keyword = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    return [n for n in names if n in by_keyword]


def load_workflow(
    spec: str,
    kwargs: Dict[str, Any],
    gconfig: Optional[GenerationHyperparameters] = None,
    tokenizer: Any = None,
) -> Any:
    """``"pkg.module:ClassName"`` (or ``"pkg.module.ClassName"``), a workflow or an agent class,
    constructed with ``kwargs`` and, when its constructor takes them by name or has ``**kwargs``,
    ``gconfig=`` (AReaL's defaults when None) and ``tokenizer=``, as AReaL's trainer scripts pass them."""
    for name, source in INJECTED.items():
        if name in kwargs:
            raise WorkflowRefusedError(
                f"workflow {spec!r}: workflow_kwargs.{name} is not allowed: the {name} comes from the configuration ({source})"
            )
    module_name, sep, class_name = spec.partition(":")
    if not sep:
        module_name, _, class_name = spec.rpartition(".")
    if not module_name or not class_name:
        raise WorkflowRefusedError(f"workflow {spec!r}: expected 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is the user's, reported by name
        raise WorkflowRefusedError(f"workflow {spec!r}: importing {module_name} failed: {_last_line(e)}") from e
    cls = getattr(module, class_name, None)
    if cls is None:
        raise WorkflowRefusedError(f"workflow {spec!r}: module {module_name} has no attribute {class_name!r}")
    kind = workflow_kind(cls) if isinstance(cls, type) else None
    if kind is None:
        raise WorkflowRefusedError(
            f"workflow {spec!r}: {class_name} is not a workflow class (no async arun_episode(self, engine, data))"
            " nor an agent class (no async run(self, data, **extra_kwargs))"
        )
    method = "arun_episode" if kind == "workflow" else "run"
    if not asyncio.iscoroutinefunction(getattr(cls, method)):
        raise WorkflowRefusedError(f"workflow {spec!r}: {class_name}.{method} must be 'async def'")
    given = {"gconfig": gconfig if gconfig is not None else GenerationHyperparameters(), "tokenizer": tokenizer}
    injected = {n: given[n] for n in _accepted(cls, INJECTED)}
    try:
        return cls(**kwargs, **injected)
    except Exception as e:  # noqa: BLE001
        also = f" and {', '.join(injected)} from the configuration" if injected else ""
        raise WorkflowRefusedError(
            f"workflow {spec!r}: {class_name}(**workflow_kwargs) refused its arguments {sorted(kwargs)}{also}: {_last_line(e)}"
        ) from e


def _last_line(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return lines[-1].strip() if lines else type(exc).__name__


def _tensor(name: str, value: Any) -> Dict[str, Any]:
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        value = value.detach().cpu().numpy()
    import numpy as np

    try:
        array = np.asarray(value)
    except ValueError as e:  # ragged rows
        raise ValueError(f"tensor {name!r} is not a rectangular array: {e}") from None
    if array.dtype == object:
        raise TypeError(f"tensor {name!r} holds Python objects, not numbers")
    array = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"), copy=False))
    return {
        "dtype": array.dtype.name,
        "shape": list(array.shape),
        "data": base64.b64encode(array.tobytes()).decode("ascii"),
    }


def _merged(a: Dict[str, Dict[str, List[float]]], b: Dict[str, Dict[str, List[float]]]) -> Dict[str, Dict[str, List[float]]]:
    """``{scope: {key: values}}`` of both, ``a``'s values first."""
    out = {scope: {k: list(v) for k, v in keys.items()} for scope, keys in a.items()}
    for scope, keys in b.items():
        for k, v in keys.items():
            out.setdefault(scope, {}).setdefault(k, []).extend(v)
    return out


def _finite(x: Any) -> Optional[float]:
    if x is None:
        return None
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"reward {v!r} is not a finite number")
    return v


def encode_result(result: Any) -> Dict[str, Any]:
    """The wire form of what ``arun_episode`` returned: None, a dict of tensors, or a dict of
    interactions. Raises ``TypeError`` naming what is wrong; the engine checks shapes and keys."""
    if result is None:
        return {"kind": "none"}
    if not isinstance(result, dict):
        raise TypeError(f"arun_episode returned a {type(result).__name__}; expected a dict of tensors, a dict of interactions or None")
    if result and all(isinstance(v, InteractionWithTokenLogpReward) for v in result.values()):
        ids = {id(v): str(k) for k, v in result.items()}
        out = []
        for key, it in result.items():
            r = it.model_response
            if r is None:
                raise TypeError(f"interaction {key!r} has no model_response")
            out.append({
                "id": str(key),
                "parent": ids.get(id(it.parent)) if it.parent is not None else None,
                "input_tokens": [int(t) for t in r.input_tokens],
                "output_tokens": [int(t) for t in r.output_tokens],
                "output_logprobs": [float(x) for x in r.output_logprobs],
                "output_versions": [int(v) for v in r.output_versions],
                "reward": _finite(it.reward),
                "chat_template_type": it.chat_template_type,
            })
        return {"kind": "interactions", "interactions": out}
    return {"kind": "tensors", "tensors": {str(k): _tensor(str(k), v) for k, v in result.items()}}


def encode_agent_result(result: Any) -> Dict[str, Any]:
    """The wire form of what an agent's ``run`` returned: a number (one reward), None (no reward)
    or a dict of completion id -> number. Raises ``TypeError`` for anything else and ``ValueError``
    for a reward that is not finite."""
    if result is None or _is_number(result):
        return {"kind": "reward", "reward": _finite(result)}
    if isinstance(result, dict) and all(_is_number(v) for v in result.values()):
        rewards = {}
        for key, value in result.items():
            try:
                rewards[str(key)] = _finite(value)
            except ValueError as e:
                raise ValueError(f"completion {key!r}: {e}") from None
        return {"kind": "rewards", "rewards": rewards}
    shown = repr(result)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    raise TypeError(
        f"run returned a {type(result).__name__} ({shown}); expected a number, None or a dict of completion id -> number"
    )


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real)


def _gconfig(g: Any) -> Dict[str, Any]:
    out = {}
    # vars() of a dataclass instance is its fields: much cheaper than dataclasses.fields per request.
    for name, v in (vars(g) if hasattr(g, "__dict__") else {f.name: getattr(g, f.name) for f in dataclasses.fields(g)}).items():
        if isinstance(v, (str, int, float, bool)) or v is None:
            out[name] = v
        elif isinstance(v, (list, tuple)):
            out[name] = list(v)
    return out


class _Engine(InferenceEngine):
    """What a workflow's ``engine`` is in the worker: generations go to the JVM."""

    def __init__(self, worker: "WorkflowWorker", episode: int) -> None:
        self._worker = worker
        self._episode = episode

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        return await self._worker.generate(self._episode, req)

    def get_version(self) -> int:
        return self._worker.version


class WorkflowWorker:
    """Runs episodes of one workflow or agent over a channel: ``send(message)`` writes one protocol
    message; :meth:`handle` takes each message from the JVM. Everything runs on one asyncio loop."""

    def __init__(self, workflow: Any, send: Any) -> None:
        self.workflow = workflow
        self.kind = workflow_kind(type(workflow))
        if self.kind is None:
            raise TypeError(f"{type(workflow).__name__} has neither arun_episode nor run")
        self._send = send
        self.version = 0
        self._episodes: Dict[int, asyncio.Task] = {}
        self._requests: Dict[int, Tuple[asyncio.Future, ModelRequest]] = {}
        self._next_request = 0

    @property
    def running(self) -> int:
        return len(self._episodes)

    def handle(self, message: Dict[str, Any]) -> None:
        op = message.get("op")
        if op == "start":
            self._start(message)
        elif op == "cancel":
            task = self._episodes.get(int(message["episode"]))
            if task is not None:
                task.cancel()
        elif op == "version":
            self.version = max(self.version, int(message["version"]))
        elif op == "generated":
            self._generated(message)
        else:
            raise ValueError(f"unknown op {op!r}")

    def _start(self, m: Dict[str, Any]) -> None:
        episode = int(m["episode"])
        if episode in self._episodes:
            raise ValueError(f"episode {episode} is already running")
        self.version = max(self.version, int(m.get("version", 0)))
        ctx = workflow_context.WorkflowContext(
            is_eval=bool(m.get("is_eval", False)), task_id=m.get("task_id"), sample_idx=m.get("sample_idx")
        )
        task = asyncio.get_running_loop().create_task(self._run(episode, ctx, m.get("data"), m.get("extra_kwargs")))
        # The callback, not the task, reports the end: a task cancelled before its first step
        # (a cancel read with its start) never runs its coroutine's code.
        task.add_done_callback(lambda t: self._ended(episode, t))
        self._episodes[episode] = task

    def _ended(self, episode: int, task: asyncio.Task) -> None:
        self._episodes.pop(episode, None)
        message = {"op": "cancelled", "episode": episode} if task.cancelled() else task.result()
        try:
            self._send(message)
        except ValueError as e:  # a NaN or infinity among the stats: JSON cannot carry it
            error = f"{type(self.workflow).__name__}: the episode's message cannot be sent: {e} (a NaN or infinity among its stats?)"
            self._send({"op": "failed", "episode": episode, "error": error, "traceback": ""})

    async def _episode(self, episode: int, data: Any, extra_kwargs: Any) -> Dict[str, Any]:
        if self.kind == "workflow":
            return encode_result(await self.workflow.arun_episode(_Engine(self, episode), data))
        if extra_kwargs is None:
            extra_kwargs = {}
        if not isinstance(extra_kwargs, dict):
            raise TypeError(f"extra_kwargs is a {type(extra_kwargs).__name__}, not an object")
        return encode_agent_result(await self.workflow.run(data, **extra_kwargs))

    async def _run(self, episode: int, ctx: workflow_context.WorkflowContext, data: Any, extra_kwargs: Any) -> Dict[str, Any]:
        """The episode's ``done`` or ``failed`` message; its cancellation propagates."""
        workflow_context.set(ctx)  # this task's own copy of the context
        captured = stats_tracker.capture()  # what this episode records, apart from its siblings
        try:
            result = await self._episode(episode, data, extra_kwargs)
        except Exception as e:  # noqa: BLE001 - every failure is the episode's, reported by name
            method = "arun_episode" if self.kind == "workflow" else "run"
            return {
                "op": "failed",
                "episode": episode,
                "error": f"{type(self.workflow).__name__}.{method}: {_last_line(e)}",
                "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__)),
            }
        return {"op": "done", "episode": episode, "result": result, "stats": _merged(captured, stats_tracker.drain())}

    async def generate(self, episode: int, req: ModelRequest) -> ModelResponse:
        self._next_request += 1
        request = self._next_request
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._requests[request] = (future, req)
        self._send({
            "op": "generate",
            "episode": episode,
            "request": request,
            "rid": str(req.rid),
            "input_ids": [int(t) for t in req.input_ids],
            "gconfig": _gconfig(req.gconfig),
        })
        try:
            return await future
        except asyncio.CancelledError:
            # Cancelling the task cancels the future it awaits: unanswered unless it has a result.
            if future.cancelled() or not future.done():
                self._send({"op": "abort", "request": request})
            raise
        finally:
            self._requests.pop(request, None)

    def _generated(self, m: Dict[str, Any]) -> None:
        entry = self._requests.get(int(m["request"]))
        if entry is None:
            return  # answered after its episode was cancelled: dropped
        future, req = entry
        if future.done():
            return
        if "error" in m:
            future.set_exception(RuntimeError(f"generation {req.rid} failed: {m['error']}"))
            return
        future.set_result(ModelResponse(
            input_tokens=list(req.input_ids),
            # The engine writes ints and floats: the decoded lists are used as they are.
            output_tokens=m["output_tokens"],
            output_logprobs=m["output_logprobs"],
            output_versions=m["output_versions"],
            stop_reason=str(m.get("stop_reason", "stop")),
            tokenizer=req.tokenizer,
            latency=float(m.get("latency", math.inf)),
            ttft=float(m.get("ttft", math.inf)),
        ))


def _watch_parent(parent: int) -> None:
    # A JVM killed with SIGKILL cannot close our stdin while episodes wait: exit when reparented.
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def load_from_env(spec: str, environ: Mapping[str, str]) -> Any:
    """:func:`load_workflow` with the keyword arguments, gconfig and tokenizer the engine passes in
    ``ROLLOUT_WORKFLOW_KWARGS``, ``ROLLOUT_WORKFLOW_GCONFIG`` and ``ROLLOUT_TOKENIZER_SOCKET``."""
    kwargs = _json_object(spec, environ, "ROLLOUT_WORKFLOW_KWARGS")
    try:
        gconfig = from_gconfig(_json_object(spec, environ, "ROLLOUT_WORKFLOW_GCONFIG"))
    except UnknownGenerationKeyError as e:
        raise WorkflowRefusedError(f"workflow {spec!r}: ROLLOUT_WORKFLOW_GCONFIG: {e.args[0]}") from e
    socket_path = environ.get(SOCKET_ENV)
    tokenizer = EngineTokenizer(socket_path) if socket_path else None
    return load_workflow(spec, kwargs, gconfig=gconfig, tokenizer=tokenizer)


def _json_object(spec: str, environ: Mapping[str, str], name: str) -> Dict[str, Any]:
    try:
        value = json.loads(environ.get(name) or "{}")
    except ValueError as e:
        raise WorkflowRefusedError(f"workflow {spec!r}: {name} is not JSON: {e}") from e
    if not isinstance(value, dict):
        raise WorkflowRefusedError(f"workflow {spec!r}: {name} is a {type(value).__name__}, not a JSON object")
    return value


async def _serve(worker_spec: str, environ: Mapping[str, str], infd: int, out: Any) -> int:
    loop = asyncio.get_running_loop()
    pending: List[str] = []

    def flush() -> None:
        out.write("".join(pending))
        pending.clear()
        out.flush()

    def send_now(message: Dict[str, Any]) -> None:
        pending.append(json.dumps(message, allow_nan=False) + "\n")
        flush()

    def send(message: Dict[str, Any]) -> None:
        # Lines sent in one turn of the event loop leave in one write: many episodes, few system calls.
        pending.append(json.dumps(message, allow_nan=False) + "\n")
        if len(pending) == 1:
            loop.call_soon(flush)

    try:
        workflow = load_from_env(worker_spec, environ)
    except WorkflowRefusedError as e:
        send_now({"op": "refused", "error": str(e)})
        return 2
    worker = WorkflowWorker(workflow, send)
    send_now({"op": "ready", "pid": os.getpid(), "workflow": worker_spec, "kind": worker.kind})
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(infd, "rb"))
    while True:
        line = await reader.readline()
        if not line:
            break
        worker.handle(json.loads(line))
    for task in list(worker._episodes.values()):
        task.cancel()
    if pending:
        flush()
    return 0


def main(argv: Optional[list] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        print("usage: python -m rollout_client.areal.worker package.module:ClassName", file=sys.stderr)
        return 2
    # The protocol channel: private copies of the original stdin and stdout; the workflow's
    # prints and C-level writes to fd 1 go to stderr.
    infd = os.dup(0)
    outfd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull)
    sys.stdout = sys.stderr
    out = os.fdopen(outfd, "w", encoding="utf-8")  # flushed by _serve after each batch of lines
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    return asyncio.run(_serve(argv[0], dict(os.environ), infd, out))


if __name__ == "__main__":
    sys.exit(main())
