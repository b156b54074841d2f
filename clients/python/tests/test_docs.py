"""docs/trainer.md's Python loop runs as written, against a real engine."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Dict

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "trainer.md"


def loop_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    loops = [b for b in blocks if "client.batches(" in b]
    assert len(loops) == 1, "docs/trainer.md should hold exactly one Python loop"
    return loops[0]


def test_the_loop_in_docs_trainer_md_runs(secure: Dict[str, object], v0: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLOUT_CONTACTS", str(secure["url"]))
    monkeypatch.setenv("ROLLOUT_CA", str(secure["cafile"]))
    monkeypatch.setenv("ROLLOUT_GATEWAY_TOKEN", str(secure["token"]))
    trained = []

    def train(batch, tensors, version):  # the servers keep serving v0's weights, labelled anew
        trained.append((batch.batch_id, tuple(tensors["input_ids"].shape)))
        path = tmp_path / f"v{version}.rlm"
        shutil.copyfile(v0, path)
        return str(path)

    from rollout_client import RolloutClient

    with RolloutClient(str(secure["url"]), cafile=str(secure["cafile"])) as c:
        start = c.status().version
    namespace = {"train": train, "LAST_VERSION": start + 2, "__name__": "docs_example"}
    exec(compile(loop_block(), str(DOC), "exec"), namespace)  # noqa: S102 - the documented code, verbatim
    assert len(trained) == 2 and namespace["version"] == start + 2
