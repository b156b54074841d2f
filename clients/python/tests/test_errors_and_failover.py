"""Fail-over between contact points, the unreachable error, and the codes a real engine rarely
answers (engine_error, unavailable), against stub gateways and a two-node cluster."""

from __future__ import annotations

import socket
import time
from typing import Iterator

import pytest

from conftest import FAST_ENGINE
from engine import Processes, free_port
from rollout_client import (
    EngineError,
    EngineUnreachableError,
    GatewayError,
    GatewayUnavailableError,
    RolloutClient,
)
from rollout_client.errors import ERRORS_BY_CODE, error_for
from stub import StubGateway


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_every_code_has_its_class() -> None:
    assert set(ERRORS_BY_CODE) == {
        "unauthorized", "bad_request", "not_found", "method_not_allowed", "payload_too_large",
        "version_refused", "weights_not_loaded", "engine_error", "unavailable",
    }
    for code, cls in ERRORS_BY_CODE.items():
        e = error_for("x", "http://g", 418, code, "m")
        assert type(e) is cls and e.code == code
    assert type(error_for("x", "http://g", 418, "teapot", "m")) is GatewayError


def test_engine_error_500_is_raised_not_retried() -> None:
    stub = StubGateway(500, {"error": {"message": "the collector failed", "code": "engine_error"}})
    try:
        with RolloutClient(stub.url, token_from_env=False) as c:
            with pytest.raises(EngineError) as e:
                c.status()
        assert e.value.status == 500 and "the collector failed" in str(e.value)
        assert len(stub.requests) == 1
    finally:
        stub.close()


def test_unavailable_503_fails_over_to_the_next_contact_point() -> None:
    down = StubGateway(503, {"error": {"message": "shutting down", "code": "unavailable"}})
    up = StubGateway(200, {"version": 7, "running": 0})
    try:
        with RolloutClient([down.url, up.url], token_from_env=False) as c:
            assert c.status().version == 7
            assert c.status().version == 7  # the one that answered is now tried first
        assert len(down.requests) == 1 and len(up.requests) == 2
        with RolloutClient([down.url], token_from_env=False, retry_deadline=0.3) as c:
            with pytest.raises(EngineUnreachableError) as e:
                c.status()
        assert "HTTP 503 unavailable: shutting down" in str(e.value)
        assert issubclass(GatewayUnavailableError, GatewayError)
    finally:
        down.close()
        up.close()


def test_unreachable_names_every_contact_point_and_respects_the_deadline() -> None:
    a, b = closed_port_url(), closed_port_url()
    with RolloutClient([a, b], token_from_env=False, retry_deadline=1.0, retry_initial_backoff=0.05) as c:
        started = time.monotonic()
        with pytest.raises(EngineUnreachableError) as e:
            c.next_batch(wait=0)
        elapsed = time.monotonic() - started
    assert elapsed < 3.0
    assert e.value.last_errors == {a: "connection refused", b: "connection refused"}
    assert a in str(e.value) and b in str(e.value) and "pull a batch" in str(e.value)


def test_a_silent_gateway_times_out_and_counts_as_a_failure() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)  # accepts (in the backlog) and never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with RolloutClient(url, token_from_env=False, request_timeout=0.3, retry_deadline=0.5) as c:
            with pytest.raises(EngineUnreachableError) as e:
                c.status()
        assert "timed out" in e.value.last_errors[url]


@pytest.fixture(scope="module")
def pair(processes: Processes, model_server: str) -> Iterator[dict]:
    """node-1: coordinator, rollout, gateway (the seed; holds the singletons); node-2: rollout,
    gateway. Killing node-2 leaves node-1 (the lower address) running the cluster."""
    # On a tie the Split Brain Resolver keeps the lower address: node-1 must have the lower port.
    seed, other = sorted({free_port() for _ in range(4)})[:2]
    n1 = processes.node("pair-1", model_server, "coordinator,rollout,gateway", seed, overrides=FAST_ENGINE)
    n2 = processes.node("pair-2", model_server, "rollout,gateway", other, seed_port=seed, overrides=FAST_ENGINE)
    yield {"node1": n1, "node2": n2}


def test_fail_over_to_the_second_gateway_when_the_first_node_is_killed(pair: dict) -> None:
    n1, n2 = pair["node1"], pair["node2"]
    # The acknowledgement is answered once the retired tasks are written to a majority, which with
    # node-2 gone means after the Split Brain Resolver has downed it (about 17 s).
    # Without following redirects: the batch is relayed through node-2's gateway, the one killed
    # (a client that follows would read it from node-1's, which holds it; test_redirects.py).
    with RolloutClient(
        [n2.gateway, n1.gateway],
        token_from_env=False,
        retry_deadline=60.0,
        request_timeout=60.0,
        follow_redirects=False,
    ) as c:
        b = c.next_batch(wait=60)
        assert b is not None
        n2.proc.kill()
        # The acknowledgement goes to node-1's gateway, which never handed the batch out: it still
        # retires the tasks because their ids travel along.
        assert c.ack(b) is False
        later = []
        end = time.monotonic() + 12.0  # four batch_ack_timeouts: a batch not retired would be back
        while time.monotonic() < end:
            nb = c.next_batch(wait=1.0)
            if nb is not None:
                later.append(nb)
                c.ack(nb)
        assert later, "no batch through the second gateway"
        again = [t for nb in later for t in nb.task_ids if t in set(b.task_ids)]
        assert again == [], f"tasks of the acknowledged batch came again: {again}"
        assert c.contact_points[c._preferred] == n1.gateway


def test_a_refusal_after_an_attempt_that_broke_off_says_it_may_have_been_applied() -> None:
    import threading

    from rollout_client import VersionRefusedError

    hangup = socket.socket()
    hangup.bind(("127.0.0.1", 0))
    hangup.listen(4)

    def read_then_close() -> None:
        conn, _ = hangup.accept()
        conn.recv(65536)  # the publish arrived; the answer never leaves
        conn.close()

    t = threading.Thread(target=read_then_close, daemon=True)
    t.start()
    refusing = StubGateway(409, {"error": {"message": "version 5 is not greater than 5", "code": "version_refused"}})
    try:
        url = f"http://127.0.0.1:{hangup.getsockname()[1]}"
        with RolloutClient([url, refusing.url], token_from_env=False) as c:
            with pytest.raises(VersionRefusedError) as e:
                c.publish_weights(5, "/tmp/v5.rlm")
        assert e.value.maybe_applied_earlier and "may have been applied" in str(e.value)
        with RolloutClient([refusing.url], token_from_env=False) as c:
            with pytest.raises(VersionRefusedError) as plain:
                c.publish_weights(5, "/tmp/v5.rlm")
        assert not plain.value.maybe_applied_earlier
    finally:
        t.join(5)
        hangup.close()
        refusing.close()
