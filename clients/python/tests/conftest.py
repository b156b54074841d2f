"""Fixtures: a model server and engine nodes started as real processes, always stopped."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Dict, Iterator

import pytest

try:
    import rollout_client  # noqa: F401  (installed: test what pip installed)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # else straight from the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import JAR, Node, Processes, free_port, make_tls  # noqa: E402

# Small batches that come quickly; redelivery after 3 s; no staleness stop (tests rarely publish).
FAST_ENGINE = [
    "rollout.batch_ack_timeout=3",
    "rollout.consumer_batch_size=2",
    "rollout.max_head_offpolicyness=1000",
    "rollout.queue_size=16",
    "gconfig.n_samples=4",
]


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not JAR.exists():
        pytest.fail(f"the engine is not built ({JAR} is missing): run the README's build or test command first")
    return tmp_path_factory.mktemp("engine")


@pytest.fixture(scope="session")
def processes(workdir: Path) -> Iterator[Processes]:
    p = Processes(workdir)
    try:
        yield p
    finally:
        p.stop_all()


@pytest.fixture(scope="session")
def v0(processes: Processes, workdir: Path) -> Path:
    return processes.demo_weights(workdir / "weights")


@pytest.fixture(scope="session")
def model_server(processes: Processes, v0: Path) -> str:
    return processes.model_server("model-server", v0)


@pytest.fixture(scope="session")
def secure(processes: Processes, workdir: Path, model_server: str) -> Dict[str, object]:
    """One node (coordinator, rollout, gateway) whose gateway needs a token and speaks HTTPS only."""
    password = secrets.token_hex(12)
    token = secrets.token_urlsafe(24)
    tls = make_tls(workdir, password)
    node: Node = processes.node(
        "secure-node", model_server, "coordinator,rollout,gateway", free_port(),
        extra=["--gateway-key-store", str(tls["store"])], overrides=FAST_ENGINE,
        env={"ROLLOUT_GATEWAY_TOKEN": token, "ROLLOUT_GATEWAY_KEY_STORE_PASSWORD": password},
    )
    assert node.gateway is not None and node.gateway.startswith("https://")
    return {"url": node.gateway, "token": token, "cafile": str(tls["pem"]), "node": node}
