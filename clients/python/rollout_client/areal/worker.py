"""A Python workflow worker: runs AReaL-style ``RolloutWorkflow`` episodes for the engine.

Started by the engine's JVM as ``python -u -m rollout_client.areal.worker pkg.module:ClassName``,
with the workflow's keyword arguments as a JSON object in the environment variable
``ROLLOUT_WORKFLOW_KWARGS``. One worker runs many episodes at once on one asyncio loop: each
episode is a task; ``await engine.agenerate(req)`` in it becomes a ``generate`` message to the JVM,
which runs the generation through the node's interruptible inference engine and answers with the
tokens, their log-probabilities and their weight versions.

The protocol is line-delimited JSON on the worker's original stdin and stdout; the workflow's
module sees /dev/null as stdin and stderr as stdout, so a ``print`` never reaches the channel.

  worker -> JVM, once:  {"op": "ready", "pid": 123, "workflow": "pkg.module:ClassName"}
                        or {"op": "refused", "error": "<why, naming the workflow>"}
  JVM -> worker:        {"op": "start", "episode": 5, "data": {...}, "is_eval": false,
                         "task_id": 17, "sample_idx": 2, "version": 3}
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

  RESULT: {"kind": "none"}
          {"kind": "tensors", "tensors": {name: {"dtype": "int32", "shape": [1, 12], "data": base64}}}
          {"kind": "interactions", "interactions": [{"id", "parent", "input_tokens", "output_tokens",
           "output_logprobs", "output_versions", "reward", "chat_template_type"}]}

Tensors travel as their little-endian bytes (numpy or torch, CPU); dtypes are numpy's names. The
worker exits when its stdin closes, and when its parent process is gone.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import importlib
import json
import math
import os
import sys
import threading
import time
import traceback
from typing import Any, Dict, Optional, Tuple

from .api import InferenceEngine, ModelRequest, ModelResponse, RolloutWorkflow
from .experimental.openai.types import InteractionWithTokenLogpReward
from .infra import workflow_context
from .utils import stats_tracker

__all__ = ["WorkflowWorker", "encode_result", "load_workflow", "main"]


class WorkflowRefusedError(Exception):
    """The workflow cannot be loaded: the message names it and why."""


def load_workflow(spec: str, kwargs: Dict[str, Any]) -> RolloutWorkflow:
    """``"pkg.module:ClassName"`` (or ``"pkg.module.ClassName"``) constructed with ``kwargs``."""
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
    if not isinstance(cls, type) or not callable(getattr(cls, "arun_episode", None)):
        raise WorkflowRefusedError(
            f"workflow {spec!r}: {class_name} is not a workflow class (no async arun_episode(self, engine, data))"
        )
    if not asyncio.iscoroutinefunction(cls.arun_episode):
        raise WorkflowRefusedError(f"workflow {spec!r}: {class_name}.arun_episode must be 'async def'")
    try:
        return cls(**kwargs)
    except Exception as e:  # noqa: BLE001
        raise WorkflowRefusedError(
            f"workflow {spec!r}: {class_name}(**workflow_kwargs) refused its arguments {sorted(kwargs)}: {_last_line(e)}"
        ) from e


def _last_line(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return lines[-1].strip() if lines else type(exc).__name__


def _tensor(name: str, value: Any) -> Dict[str, Any]:
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        value = value.detach().cpu().numpy()
    import numpy as np

    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"tensor {name!r} holds Python objects, not numbers")
    array = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"), copy=False))
    return {
        "dtype": array.dtype.name,
        "shape": list(array.shape),
        "data": base64.b64encode(array.tobytes()).decode("ascii"),
    }


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


def _gconfig(g: Any) -> Dict[str, Any]:
    out = {}
    for f in dataclasses.fields(g):
        v = getattr(g, f.name)
        if isinstance(v, (str, int, float, bool)) or v is None:
            out[f.name] = v
        elif isinstance(v, (list, tuple)):
            out[f.name] = list(v)
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
    """Runs episodes of one workflow over a channel: ``send(message)`` writes one protocol message;
    :meth:`handle` takes each message from the JVM. Everything runs on one asyncio loop."""

    def __init__(self, workflow: RolloutWorkflow, send: Any) -> None:
        self.workflow = workflow
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
        self._episodes[episode] = asyncio.get_running_loop().create_task(self._run(episode, ctx, m.get("data")))

    async def _run(self, episode: int, ctx: workflow_context.WorkflowContext, data: Any) -> None:
        try:
            workflow_context.set(ctx)  # this task's own copy of the context
            result = await self.workflow.arun_episode(_Engine(self, episode), data)
            message = {"op": "done", "episode": episode, "result": encode_result(result), "stats": stats_tracker.drain()}
        except asyncio.CancelledError:
            message = {"op": "cancelled", "episode": episode}
        except BaseException as e:  # noqa: BLE001 - every failure is the episode's, reported by name
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            message = {
                "op": "failed",
                "episode": episode,
                "error": f"{type(self.workflow).__name__}.arun_episode: {_last_line(e)}",
                "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__)),
            }
        finally:
            self._episodes.pop(episode, None)
        self._send(message)

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
            output_tokens=[int(t) for t in m["output_tokens"]],
            output_logprobs=[float(x) for x in m["output_logprobs"]],
            output_versions=[int(v) for v in m["output_versions"]],
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


async def _serve(worker_spec: str, kwargs: Dict[str, Any], infd: int, out: Any) -> int:
    def send(message: Dict[str, Any]) -> None:
        out.write(json.dumps(message, allow_nan=False) + "\n")
        out.flush()

    try:
        workflow = load_workflow(worker_spec, kwargs)
    except WorkflowRefusedError as e:
        send({"op": "refused", "error": str(e)})
        return 2
    worker = WorkflowWorker(workflow, send)
    send({"op": "ready", "pid": os.getpid(), "workflow": worker_spec})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(infd, "rb"))
    while True:
        line = await reader.readline()
        if not line:
            break
        worker.handle(json.loads(line))
    for task in list(worker._episodes.values()):
        task.cancel()
    return 0


def main(argv: Optional[list] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        print("usage: python -m rollout_client.areal.worker package.module:ClassName", file=sys.stderr)
        return 2
    kwargs = json.loads(os.environ.get("ROLLOUT_WORKFLOW_KWARGS") or "{}")
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
    out = os.fdopen(outfd, "w", encoding="utf-8", buffering=1)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    return asyncio.run(_serve(argv[0], kwargs, infd, out))


if __name__ == "__main__":
    sys.exit(main())
