"""The examples run: two gloo ranks train against a real engine (rank 0 pulls, acks, publishes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from engine import run_gloo_ranks

pytest.importorskip("torch")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

from tinylm import TinyLmWeights  # noqa: E402
from rollout_client import RolloutClient  # noqa: E402


def test_two_gloo_ranks_train_and_rank_0_publishes(secure: Dict[str, object], v0: Path, tmp_path: Path) -> None:
    with RolloutClient(str(secure["url"]), token=str(secure["token"]), cafile=str(secure["cafile"])) as c:
        start = c.status().version
        # The servers serve v0's weights (the tests publish only that file); label them with the engine's version.
        w = TinyLmWeights.read(v0)
        w.version = start
        initial = w.write(tmp_path / f"v{start}.rlm")
        env = dict(os.environ, ROLLOUT_GATEWAY_TOKEN=str(secure["token"]), PYTHONPATH=str(EXAMPLES.parent))
        outputs = run_gloo_ranks(EXAMPLES / "distributed_trainer.py", [
            "--contact", str(secure["url"]), "--cafile", str(secure["cafile"]), "--initial-weights", str(initial),
            "--weights-dir", str(tmp_path / "w"), "--steps", "2"], env)
        assert len(re.findall(r"^step \d/2 ", outputs[0], re.M)) == 2, outputs[0]
        digests = [re.search(r"parameters (\w+)", o).group(1) for o in outputs]  # type: ignore[union-attr]
        assert digests[0] == digests[1], "the ranks' parameters differ"
        assert c.status().version == start + 2
        assert (tmp_path / "w" / f"v{start + 2}.rlm").exists()


def test_rollout_local_with_the_python_trainer_runs_end_to_end(tmp_path: Path) -> None:
    """`rollout local --trainer python`: the engine in one JVM, the PyTorch trainer as its own process
    through a gateway; two steps (the learning itself is measured in benchmarks/RESULTS.md)."""
    from engine import JAR, REPO, rollout_command

    if not JAR.exists():
        pytest.fail(f"the engine is not built ({JAR} is missing)")
    env = dict(os.environ, ROLLOUT_HOME=str(REPO), ROLLOUT_PYTHON=sys.executable)
    env.pop("ROLLOUT_GATEWAY_TOKEN", None)
    run = subprocess.run(
        [*rollout_command(), "local", "--trainer", "python", "--steps", "2", "--no-status",
         f"rollout.fileroot={tmp_path}", "rollout.dump_to_file=false"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "grpo_trainer.py (PyTorch) through the gateway at http://127.0.0.1:" in run.stdout
    assert re.search(r"^step 2/2 +batch \d+ +26 groups +v2 reward", run.stdout, re.M), run.stdout
    assert "Done in" in run.stdout and "2 steps, weight version 2." in run.stdout
    assert list(tmp_path.rglob("v2.rlm"))
