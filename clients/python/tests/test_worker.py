"""The Python workflow worker as the engine drives it: a real worker process, the JVM's side played
by the test over the worker's stdin and stdout (the protocol in rollout_client/areal/worker.py)."""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import pytest

from test_engine_tokenizer import EOS, PAD, FakeTokenizerServer, ids

CLIENT = Path(__file__).resolve().parents[1]
WORKFLOWS = Path(__file__).resolve().parent / "workflows"
DEADLINE_S = 30.0


class FakeJvm:
    """Starts a worker for ``spec`` and exchanges protocol lines with it, every read bounded."""

    def __init__(self, spec: str, kwargs: Optional[Dict[str, Any]] = None, env: Optional[Dict[str, str]] = None) -> None:
        passed = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUT_")}
        passed["PYTHONPATH"] = os.pathsep.join([str(CLIENT), str(WORKFLOWS)])
        passed["ROLLOUT_WORKFLOW_KWARGS"] = json.dumps(kwargs or {})
        passed.update(env or {})
        env = passed
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

    def start(spec: str, kwargs: Optional[Dict[str, Any]] = None, env: Optional[Dict[str, str]] = None) -> FakeJvm:
        j = FakeJvm(spec, kwargs, env)
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
    assert j.receive() == {"op": "ready", "pid": j.proc.pid, "workflow": "toy_workflows:OneTurn", "kind": "workflow"}
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
        ("toy_workflows:SyncAgent", {}, "SyncAgent.run must be 'async def'"),
        ("toy_workflows:OneTurn", {"gconfig": {"max_new_tokens": 3}},
         "workflow_kwargs.gconfig is not allowed: the gconfig comes from the configuration (gconfig { })"),
        ("toy_workflows:Prompted", {"tokenizer": "/models/qwen"},
         "workflow_kwargs.tokenizer is not allowed: the tokenizer comes from the configuration (tokenizer_path)"),
        ("toy_workflows:Prompted", {"enable_thinking": True, "max_turns": 2},
         "Prompted(**workflow_kwargs) refused its arguments ['enable_thinking', 'max_turns'] and gconfig, tokenizer"
         " from the configuration: TypeError"),
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


def test_a_bad_gconfig_from_the_engine_is_refused(jvm_for) -> None:
    j = jvm_for("toy_workflows:OneTurn", env={"ROLLOUT_WORKFLOW_GCONFIG": '{"max_new_tokenz": 3}'})
    m = j.receive()
    assert m["op"] == "refused" and "ROLLOUT_WORKFLOW_GCONFIG: not a gconfig key: max_new_tokenz" in m["error"]
    assert j.proc.wait(DEADLINE_S) == 2


@pytest.fixture
def tokenizer_server():
    d = tempfile.mkdtemp(prefix="tok", dir="/tmp")
    s = FakeTokenizerServer(os.path.join(d, "tok.sock"))
    yield s
    s.close()
    shutil.rmtree(d, ignore_errors=True)


def test_gconfig_and_the_engines_tokenizer_are_given_to_a_constructor_that_takes_them(jvm_for, tokenizer_server) -> None:
    gconfig = {"max_new_tokens": 5, "temperature": 0.5, "reward_normalization_use_std": True}
    j = jvm_for("toy_workflows:Prompted", {"enable_thinking": True},
                env={"ROLLOUT_WORKFLOW_GCONFIG": json.dumps(gconfig), "ROLLOUT_TOKENIZER_SOCKET": tokenizer_server.path})
    assert j.receive()["kind"] == "workflow"
    for e in range(2):
        j.send({"op": "start", "episode": e, "data": {"question": "2+2?", "answer": "4"}})
    for _ in range(2):
        g = j.receive()
        assert g["op"] == "generate" and g["input_ids"] == ids("[enable_thinking=true]<user>2+2?\n<assistant>")
        assert (g["gconfig"]["max_new_tokens"], g["gconfig"]["temperature"]) == (5, 0.5)
        assert g["gconfig"]["stop_token_ids"] == [PAD, EOS]
        answer = "4" if g["episode"] == 0 else "5"
        j.send({"op": "generated", "request": g["request"], "output_tokens": ids(answer) + [EOS],
                "output_logprobs": [-0.1, -0.2], "output_versions": [0, 0]})
    done = {m["episode"]: m for m in (j.receive() for _ in range(2))}
    assert done[0]["stats"]["rollout"]["reward"] == [1.0] and done[1]["stats"]["rollout"]["reward"] == [0.0]
    assert tokenizer_server.ops["chat"] == 2 and tokenizer_server.ops["decode"] == 2
    assert j.close() == 0


def test_a_constructor_with_kwargs_gets_both_and_no_socket_means_no_tokenizer(jvm_for) -> None:
    j = jvm_for("toy_workflows:TakesAnything", {"turns": 2})
    assert j.receive()["op"] == "ready"
    j.send({"op": "start", "episode": 1, "data": {}})
    m = j.receive()
    assert m["result"] == {"kind": "none"}
    assert m["stats"]["rollout"] == {"n_kwargs": [3.0], "max_new_tokens": [16384.0], "has_tokenizer": [0.0]}


AGENT_KWARGS = {"base_url": "http://127.0.0.1:9/v1", "api_key": "secret", "model": "default"}


def start_agent(j: FakeJvm, episode: int, returns: str, **fields: Any) -> None:
    j.send({"op": "start", "episode": episode, "data": {"returns": returns, "text": "abc"},
            "extra_kwargs": AGENT_KWARGS, **fields})


def test_an_agent_runs_with_the_engines_extra_kwargs_and_returns_rewards(jvm_for) -> None:
    # The agent's constructor takes neither gconfig nor tokenizer: it gets workflow_kwargs only.
    j = jvm_for("toy_workflows:ScoringAgent", {"scale": 2.0}, env={"ROLLOUT_WORKFLOW_GCONFIG": '{"max_new_tokens": 5}'})
    assert j.receive() == {"op": "ready", "pid": j.proc.pid, "workflow": "toy_workflows:ScoringAgent", "kind": "agent"}
    start_agent(j, 1, "reward", is_eval=True, task_id=3, sample_idx=0)
    start_agent(j, 2, "none")
    start_agent(j, 3, "rewards")
    done = {m["episode"]: m for m in (j.receive() for _ in range(3))}
    assert done[1]["result"] == {"kind": "reward", "reward": 6.0}
    assert done[1]["stats"] == {"eval-rollout": {"calls": [1.0]}}
    assert done[2]["result"] == {"kind": "reward", "reward": None}
    assert done[3]["result"] == {"kind": "rewards", "rewards": {"http://127.0.0.1:9/v1#0": 0.0, "http://127.0.0.1:9/v1#1": 2.0}}
    j.send({"op": "start", "episode": 4, "data": {"returns": "reward", "text": "abc"}, "extra_kwargs": {"api_key": "other"}})
    assert j.receive()["result"] == {"kind": "reward", "reward": 0.0}
    j.send({"op": "start", "episode": 5, "data": {"returns": "none"}})  # no extra_kwargs: none passed
    assert j.receive()["result"] == {"kind": "reward", "reward": None}
    j.send({"op": "start", "episode": 6, "data": {"returns": "none"}, "extra_kwargs": []})
    assert j.receive()["error"] == "ScoringAgent.run: TypeError: extra_kwargs is a list, not an object"
    assert j.close() == 0


@pytest.mark.parametrize(
    "returns, error",
    [
        ("text", "ScoringAgent.run: TypeError: run returned a str ('five'); expected a number, None or a dict of completion id -> number"),
        ("nan", "ScoringAgent.run: ValueError: reward nan is not a finite number"),
        ("inf-in-dict", "ScoringAgent.run: ValueError: completion 'c2': reward inf is not a finite number"),
        ("nan-stat", "ScoringAgent: the episode's message cannot be sent: Out of range float values are not JSON compliant"),
    ],
)
def test_an_agent_that_returns_something_else_fails_its_episode_naming_it(jvm_for, returns: str, error: str) -> None:
    j = jvm_for("toy_workflows:ScoringAgent")
    assert j.receive()["kind"] == "agent"
    start_agent(j, 7, returns)
    m = j.receive()
    assert m["op"] == "failed" and m["episode"] == 7 and m["error"].startswith(error)


def test_a_cancelled_agent_says_so(jvm_for) -> None:
    j = jvm_for("toy_workflows:ScoringAgent")
    assert j.receive()["kind"] == "agent"
    start_agent(j, 8, "wait")
    j.send({"op": "cancel", "episode": 8})
    assert j.receive() == {"op": "cancelled", "episode": 8}
    start_agent(j, 9, "none")
    assert j.receive()["result"] == {"kind": "reward", "reward": None}


def test_a_worker_exits_when_its_parent_is_killed_with_sigkill():
    """No worker outlives the engine: its parent (here a stand-in for the JVM) killed with SIGKILL,
    the worker exits within seconds (its channel reaches end of file, and it watches its parent)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(CLIENT), str(WORKFLOWS)])
    parent_code = (
        "import subprocess, sys, time\n"
        "w = subprocess.Popen([sys.executable, '-u', '-m', 'rollout_client.areal.worker', 'toy_workflows:Waiting'],"
        " stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "assert b'\"ready\"' in w.stdout.readline()\n"
        "print(w.pid, flush=True)\n"
        "time.sleep(3600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, env=env, text=True)
    try:
        worker_pid = int(parent.stdout.readline())
        os.kill(worker_pid, 0)  # running
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while True:
            try:
                os.kill(worker_pid, 0)
            except ProcessLookupError:
                break
            # A zombie re-parented to init is reaped by it; one still listed after the deadline failed.
            assert time.monotonic() < deadline, f"worker {worker_pid} outlived its killed parent"
            time.sleep(0.1)
    finally:
        if parent.poll() is None:
            parent.kill()
