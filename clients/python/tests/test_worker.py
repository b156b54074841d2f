"""The Python workflow worker as the engine drives it: a real worker process, the JVM's side played
by the test over the worker's stdin and stdout (the protocol in rollout_client/areal/worker.py)."""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import pytest

CLIENT = Path(__file__).resolve().parents[1]
WORKFLOWS = Path(__file__).resolve().parent / "workflows"
DEADLINE_S = 30.0


class FakeJvm:
    """Starts a worker for ``spec`` and exchanges protocol lines with it, every read bounded."""

    def __init__(self, spec: str, kwargs: Optional[Dict[str, Any]] = None) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(CLIENT), str(WORKFLOWS)])
        env["ROLLOUT_WORKFLOW_KWARGS"] = json.dumps(kwargs or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "rollout_client.areal.worker", spec],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
        )
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> Dict[str, Any]:
        line = self.lines.get(timeout=DEADLINE_S)
        assert line is not None, f"the worker closed its channel; stderr: {self.stderr()}"
        return json.loads(line)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read() if self.proc.stderr else ""

    def close(self) -> int:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            return self.proc.wait(DEADLINE_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def jvm_for():
    started: List[FakeJvm] = []

    def start(spec: str, kwargs: Optional[Dict[str, Any]] = None) -> FakeJvm:
        j = FakeJvm(spec, kwargs)
        started.append(j)
        return j

    yield start
    for j in started:
        if j.proc.poll() is None:
            j.proc.kill()
            j.proc.wait(DEADLINE_S)


def tensor(wire: Dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(wire["data"]), dtype=np.dtype(wire["dtype"]).newbyteorder("<")).reshape(
        wire["shape"]
    )


def test_many_episodes_run_at_once_and_each_returns_its_row(jvm_for) -> None:
    j = jvm_for("toy_workflows:OneTurn", {"max_new_tokens": 3})
    assert j.receive() == {"op": "ready", "pid": j.proc.pid, "workflow": "toy_workflows:OneTurn"}
    for e in range(4):
        j.send({"op": "start", "episode": e, "data": {"prompt_ids": [5, 6, e], "want": 7}, "is_eval": e == 3,
                "task_id": 40, "sample_idx": e, "version": 2})
    generates = [j.receive() for _ in range(4)]  # all four wait for the JVM at once
    assert sorted(g["episode"] for g in generates) == [0, 1, 2, 3]
    assert all(g["op"] == "generate" and g["gconfig"]["max_new_tokens"] == 3 for g in generates)
    j.send({"op": "version", "version": 3})
    for g in generates:
        first = 7 if g["episode"] % 2 == 0 else 8
        j.send({"op": "generated", "request": g["request"], "output_tokens": [first, 9],
                "output_logprobs": [-0.5, -1.5], "output_versions": [2, 3], "stop_reason": "length"})
    done = {m["episode"]: m for m in (j.receive() for _ in range(4))}
    for e, m in done.items():
        assert m["op"] == "done" and m["result"]["kind"] == "tensors"
        t = {k: tensor(v) for k, v in m["result"]["tensors"].items()}
        assert t["input_ids"].tolist() == [[5, 6, e, 7 if e % 2 == 0 else 8, 9]]
        assert t["versions"].tolist() == [[-1, -1, -1, 2, 3]]
        assert t["logprobs"].dtype == np.float32 and t["logprobs"][0, 3:].tolist() == [-0.5, -1.5]
        assert t["rewards"].tolist() == [1.0 if e % 2 == 0 else 0.0]
    # Each episode's stats went under its own scope: the evaluation one under eval-rollout.
    scopes = {s for m in done.values() for s in m["stats"]}
    assert scopes <= {"rollout", "eval-rollout"} and "eval-rollout" in done[3]["stats"]
    assert done[3]["stats"]["eval-rollout"]["version"] == [3.0]
    assert j.close() == 0


def test_none_is_a_rejection_and_a_raise_fails_only_its_episode_naming_the_workflow(jvm_for) -> None:
    j = jvm_for("toy_workflows:Raising")
    assert j.receive()["op"] == "ready"
    j.send({"op": "start", "episode": 1, "data": {"question": "?"}})
    m = j.receive()
    assert m["op"] == "failed" and m["episode"] == 1
    assert m["error"] == "Raising.arun_episode: ValueError: no answer key in ['question']"
    assert "Traceback" in m["traceback"]
    j.send({"op": "start", "episode": 2, "data": {}})
    assert j.receive()["episode"] == 2, "the worker goes on after a failed episode"
    r = jvm_for("toy_workflows:Rejecting")
    assert r.receive()["op"] == "ready"
    r.send({"op": "start", "episode": 9, "data": {}})
    assert r.receive() == {"op": "done", "episode": 9, "result": {"kind": "none"}, "stats": {}}


def test_a_cancelled_episode_aborts_its_generation_and_says_so(jvm_for) -> None:
    j = jvm_for("toy_workflows:Waiting")
    assert j.receive()["op"] == "ready"
    j.send({"op": "start", "episode": 4, "data": {}})
    g = j.receive()
    assert g["op"] == "generate"
    j.send({"op": "cancel", "episode": 4})
    assert j.receive() == {"op": "abort", "request": g["request"]}
    assert j.receive() == {"op": "cancelled", "episode": 4}
    # A late answer to the aborted generation is dropped; the worker serves on.
    j.send({"op": "generated", "request": g["request"], "output_tokens": [1], "output_logprobs": [0.0],
            "output_versions": [0]})
    j.send({"op": "start", "episode": 5, "data": {}})
    assert j.receive()["op"] == "generate"


@pytest.mark.parametrize(
    "spec, kwargs, says",
    [
        ("no_such_module:X", {}, "importing no_such_module failed: ModuleNotFoundError"),
        ("toy_workflows:Missing", {}, "module toy_workflows has no attribute 'Missing'"),
        ("toy_workflows:NotAWorkflow", {}, "NotAWorkflow is not a workflow class"),
        ("toy_workflows:NeedsKwargs", {"reward": "x"}, "NeedsKwargs(**workflow_kwargs) refused its arguments ['reward']"),
    ],
)
def test_a_workflow_that_cannot_load_is_refused_naming_it(jvm_for, spec: str, kwargs: Dict[str, Any], says: str) -> None:
    j = jvm_for(spec, kwargs)
    m = j.receive()
    assert m["op"] == "refused" and says in m["error"] and spec in m["error"]
    assert j.proc.wait(DEADLINE_S) == 2


def test_the_worker_exits_when_its_channel_closes(jvm_for) -> None:
    j = jvm_for("toy_workflows:Waiting")
    assert j.receive()["op"] == "ready"
    j.send({"op": "start", "episode": 1, "data": {}})
    assert j.receive()["op"] == "generate"
    assert j.close() == 0
