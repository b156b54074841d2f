"""``client.stats``: the engine's per-version statistics, against a real engine node, and the
example trainer's TensorBoard logging of them."""

from __future__ import annotations

import json
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from rollout_client import RolloutClient, UnauthorizedError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEADLINE_S = 60.0


def client_for(secure: Dict[str, object], **kw: object) -> RolloutClient:
    args: Dict[str, object] = {"token": secure["token"], "cafile": secure["cafile"], "retry_deadline": 10.0}
    args.update(kw)
    return RolloutClient(str(secure["url"]), **args)  # type: ignore[arg-type]


def file_lines(workdir: Path, since: int) -> List[Dict[str, Any]]:
    """The node's stats file's lines of versions >= since, in version order (stable)."""
    files = list((workdir / "out").rglob("stats-secure-node.jsonl"))
    assert len(files) <= 1, files
    if not files:
        return []
    lines = [json.loads(s) for s in files[0].read_text().splitlines() if s.strip()]
    return sorted((line for line in lines if line["version"] >= since), key=lambda line: line["version"])


def test_stats_are_the_lines_of_the_nodes_stats_file(secure: Dict[str, object], workdir: Path, v0: Path) -> None:
    with client_for(secure) as client:
        # Earlier tests on this node may have left the staleness budget spent (no group may start
        # until the version moves) and groups that completed under older versions in the buffer: a
        # publish first opens the budget, and the trainer steps on until a version from `start` on
        # has its line (a version has one once a group completed under it and it is over).
        start = client.status().version + 1
        client.publish_weights(start, v0)
        end = time.monotonic() + DEADLINE_S
        version = start
        while True:
            assert time.monotonic() < end, "no line for a version from %d on in time" % start
            b = client.next_batch(wait=60)
            assert b is not None
            assert client.ack(b) is True
            version += 1
            client.publish_weights(version, v0)
            page = client.stats(since_version=start)
            ours = [line for line in page["lines"] if line["scope"] == "rollout" and line["accepted"] >= 2]
            if ours and version - start >= 2:
                break
        while client.stats(since_version=start)["complete_below"] < start + 2:
            assert time.monotonic() < end, "versions left behind were not written in time"
            time.sleep(0.1)  # polling the engine, bounded by the deadline above

        while True:  # a moment the file holds still
            assert time.monotonic() < end, "the stats file never held still"
            before = file_lines(workdir, 0)
            page = client.stats(since_version=0)
            if before == file_lines(workdir, 0):
                break
        assert page["lines"] == before  # every key and number, in version order
        assert page["complete_below"] >= start + 2
        # The newest such line with two groups or more (the loop above waited for one; a later
        # version may have closed with a single group).
        line = [
            line
            for line in page["lines"]
            if line["version"] >= start and line["scope"] == "rollout" and line["accepted"] >= 2
        ][-1]
        assert line["tokens"] > 0 and 0.0 <= line["reward"] <= 1.0
        assert isinstance(line["groups"], int) and isinstance(line["reward"], float)

        later = client.stats(since_version=line["version"])
        assert later["lines"] and all(x["version"] >= line["version"] for x in later["lines"])
        assert later["lines"] == [x for x in client.stats()["lines"] if x["version"] >= line["version"]]

        with pytest.raises(ValueError, match=r"since_version: an integer version >= 0, got -1"):
            client.stats(since_version=-1)
        with pytest.raises(ValueError, match=r"since_version: an integer version >= 0, got '3'"):
            client.stats(since_version="3")  # type: ignore[arg-type]
    with client_for(secure, token=None, token_from_env=False) as anonymous:
        with pytest.raises(UnauthorizedError):
            anonymous.stats()


def test_the_gateway_names_a_bad_parameter(secure: Dict[str, object]) -> None:
    context = ssl.create_default_context(cafile=str(secure["cafile"]))
    for query, message in (
        ("since_version=x", "query parameter 'since_version' must be an integer version >= 0, got 'x'"),
        ("since_version=-2", "query parameter 'since_version' must be an integer version >= 0, got '-2'"),
        ("from=3", "unknown query parameter 'from' (GET /v1/stats takes since_version and rank)"),
    ):
        request = urllib.request.Request(
            f"{secure['url']}/v1/stats?{query}", headers={"Authorization": f"Bearer {secure['token']}"}
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, context=context, timeout=30)
        assert e.value.code == 400
        assert json.loads(e.value.read()) == {"error": {"message": message, "code": "bad_request"}}


# ---------------------------------------------------------------- the example trainer's logging

sys.path.insert(0, str(EXAMPLES))


class FakeWriter:
    """What EngineStatsLog uses of a SummaryWriter."""

    def __init__(self) -> None:
        self.scalars: List[Tuple[str, float, int]] = []
        self.flushes = 0

    def add_scalar(self, tag: str, value: float, global_step: int) -> None:
        self.scalars.append((tag, value, global_step))

    def flush(self) -> None:
        self.flushes += 1


class FakeClient:
    """Answers ``stats`` from a list of pages, recording what was asked."""

    def __init__(self, pages: List[Dict[str, Any]]) -> None:
        self.pages = pages
        self.asked: List[int] = []

    def stats(self, since_version: int = 0) -> Dict[str, Any]:
        self.asked.append(since_version)
        return self.pages.pop(0)


def line(version: int, scope: str, reward: float, **extra: Any) -> Dict[str, Any]:
    base = {"version": version, "scope": scope, "groups": 4, "accepted": 3, "rejected": 1,
            "rejected_reasons": {"returned_none": 1}, "tokens": 100 + version, "reward": reward,
            "reward__count": 12.0}
    base.update(extra)
    return base


def test_each_version_and_scope_is_logged_once_with_the_version_as_step() -> None:
    pytest.importorskip("torch")
    from grpo_trainer import EngineStatsLog

    writer = FakeWriter()
    log = EngineStatsLog(writer)
    client = FakeClient([
        # version 1's evaluation pass is still running: its line comes later, below version 2.
        {"lines": [line(0, "rollout", 0.25, staleness_mean=0.5, staleness_max=1), line(1, "rollout", 0.5)],
         "complete_below": 1},
        {"lines": [line(1, "rollout", 0.5), line(1, "eval-rollout", 0.75, usable_slot_count=None),
                   line(2, "rollout", 0.625)],
         "complete_below": 3},
        {"lines": [], "complete_below": 3},
    ])
    assert log.poll(client) == 2
    assert log.poll(client) == 2  # version 1's training line is not logged again
    assert log.poll(client) == 0
    assert client.asked == [0, 1, 3]
    assert writer.flushes == 2

    steps = {(tag, step): value for tag, value, step in writer.scalars}
    assert len(steps) == len(writer.scalars), "a (tag, version) was logged twice"
    assert steps[("rollout/reward", 0)] == 0.25
    assert steps[("rollout/staleness_max", 0)] == 1.0
    assert steps[("rollout/rejected_reasons/returned_none", 1)] == 1.0
    assert steps[("eval-rollout/reward", 1)] == 0.75
    assert steps[("rollout/tokens", 2)] == 102.0
    assert ("eval-rollout/usable_slot_count", 1) not in steps  # None: not finite, not logged
    assert not any(tag.endswith("/version") or tag.endswith("/scope") for tag, _, _ in writer.scalars)
    assert {step for _, _, step in writer.scalars} == {0, 1, 2}


def test_without_tensorboard_the_trainer_says_so_and_logs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    import grpo_trainer

    assert grpo_trainer.tensorboard_writer(None) is None
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails as when not installed
    assert grpo_trainer.tensorboard_writer(tmp_path / "tb") is None
    assert "--tensorboard" in capsys.readouterr().out
    assert not (tmp_path / "tb").exists()


def test_the_tensorboard_block_in_docs_trainer_md_logs_each_line_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import types

    doc = (Path(__file__).resolve().parents[3] / "docs" / "trainer.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "SummaryWriter(" in b]
    assert len(blocks) == 1, "docs/trainer.md should hold one TensorBoard block"
    writers: List[FakeWriter] = []

    def summary_writer(log_dir: str) -> FakeWriter:
        writers.append(FakeWriter())
        return writers[-1]

    module = types.ModuleType("torch.utils.tensorboard")
    module.SummaryWriter = summary_writer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", module)
    namespace: Dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(blocks[0], "docs/trainer.md", "exec"), namespace)  # noqa: S102 - the documented code, verbatim
    client = FakeClient([
        {"lines": [line(0, "rollout", 0.25), line(1, "rollout", 0.5)], "complete_below": 1},
        {"lines": [line(1, "rollout", 0.5), line(1, "eval-rollout", 0.75)], "complete_below": 2},
    ])
    namespace["log_engine_stats"](client)
    namespace["log_engine_stats"](client)
    assert client.asked == [0, 1]
    scalars = writers[0].scalars
    assert ("rollout/reward", 0.5, 1) in scalars and ("eval-rollout/reward", 0.75, 1) in scalars
    assert ("rollout/rejected_reasons/returned_none", 1, 0) in scalars
    assert len({(tag, step) for tag, _, step in scalars}) == len(scalars), "a (tag, version) was logged twice"
