"""Against a real engine node whose gateway needs a bearer token and speaks HTTPS."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from engine import CuttingRelay
from rollout_client import (
    BadRequestError,
    Batch,
    BatchStreamBrokenError,
    EngineUnreachableError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    RolloutClient,
    UnauthorizedError,
    VersionRefusedError,
    WeightsNotLoadedError,
)

KEYS = {"input_ids", "attention_mask", "loss_mask", "logprobs", "versions", "rewards"}


def client_for(secure: Dict[str, object], **kw: object) -> RolloutClient:
    args: Dict[str, object] = {"token": secure["token"], "cafile": secure["cafile"], "retry_deadline": 10.0}
    args.update(kw)
    return RolloutClient(str(secure["url"]), **args)  # type: ignore[arg-type]


def pull_until(client: RolloutClient, want, deadline_s: float = 30.0) -> List[Batch]:
    """Pulls (acknowledging nothing) until ``want(batch)``; returns every batch pulled."""
    seen: List[Batch] = []
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        b = client.next_batch(wait=min(5.0, max(0.1, end - time.monotonic())))
        if b is not None:
            seen.append(b)
            if want(b):
                return seen
    raise AssertionError(f"not within {deadline_s} s; pulled {[b.batch_id for b in seen]}")


def test_pull_ack_and_publish(secure: Dict[str, object], v0: Path) -> None:
    with client_for(secure) as client:
        status = client.status()
        b = client.next_batch(wait=60)
        assert b is not None and len(b) == 2
        for g in b.groups:
            assert KEYS <= set(g.tensors)
            assert g.tensors["input_ids"].dtype == np.int32
            assert g.tensors["attention_mask"].dtype == np.bool_
            assert g.rows == 4 and sum(g.slot_row_counts) == 4
            assert g.tensors["input_ids"].flags.writeable and g.tensors["input_ids"].flags.c_contiguous
        assert status.version >= 0 and b.version >= 0
        assert (b.staleness() == np.array([b.version - g.head_version for g in b.groups])).all()
        assert b.tokens == int(b.collate()["attention_mask"].sum())
        assert client.ack(b) is True
        assert client.ack(b) is False  # idempotent: the second time the gateway no longer knows it

        now = client.status().version
        result = client.publish_weights(now + 1, v0)
        assert result.version == now + 1 and result.servers_updated == 1 and result.server_failures == {}
        assert client.status().version == now + 1


def test_a_batch_not_acknowledged_comes_again(secure: Dict[str, object]) -> None:
    with client_for(secure) as client:
        first = client.next_batch(wait=60)
        assert first is not None
        pulled = pull_until(client, lambda b: b.batch_id == first.batch_id)
        again = pulled[-1]
        assert again.task_ids == first.task_ids
        for g1, g2 in zip(first.groups, again.groups):
            for k in g1.tensors:
                np.testing.assert_array_equal(g1.tensors[k], g2.tensors[k])
        for b in pulled:
            client.ack(b)


def test_without_the_token_or_the_ca_the_gateway_refuses(secure: Dict[str, object]) -> None:
    with client_for(secure, token=None, token_from_env=False) as anonymous:
        with pytest.raises(UnauthorizedError) as e:
            anonymous.status()
        assert e.value.status == 401 and e.value.code == "unauthorized"
    with client_for(secure, token="not-the-token") as wrong:
        with pytest.raises(UnauthorizedError):
            wrong.next_batch(wait=0)
    # Without the CA file the certificate is not trusted: every attempt fails, naming TLS.
    with RolloutClient(str(secure["url"]), token=str(secure["token"]), retry_deadline=0.5) as untrusting:
        with pytest.raises(EngineUnreachableError) as u:
            untrusting.status()
        assert "TLS" in str(u.value) and str(secure["url"]) in str(u.value)
    # Plain HTTP to an HTTPS-only gateway gets no answer either.
    plain = str(secure["url"]).replace("https://", "http://")
    with RolloutClient(plain, token=str(secure["token"]), retry_deadline=0.5, request_timeout=2) as cleartext:
        with pytest.raises(EngineUnreachableError):
            cleartext.status()


def test_each_gateway_error_code_is_its_exception(secure: Dict[str, object], tmp_path: Path, v0: Path) -> None:
    with client_for(secure) as client:
        def call(method: str, path: str, body: bytes = b""):
            return client._call("probe", method, path, body, 10.0, lambda cp, r, a: client._json(cp, "probe", r))

        with pytest.raises(BadRequestError) as e:
            call("POST", "/v1/batches/next?wait=soon")
        assert e.value.code == "bad_request" and "wait" in e.value.message
        with pytest.raises(NotFoundError):
            call("GET", "/v1/nothing-here")
        with pytest.raises(MethodNotAllowedError):
            call("GET", "/v1/weights", None)  # type: ignore[arg-type]
        with pytest.raises(PayloadTooLargeError):
            call("POST", "/v1/batches/1/ack", json.dumps({"task_ids": list(range(20000))}).encode())
        now = client.status().version
        with pytest.raises(VersionRefusedError) as refused:
            client.publish_weights(now, tmp_path / "any.rlm")
        assert refused.value.status == 409 and not refused.value.maybe_applied_earlier
        broken = tmp_path / "broken.rlm"
        broken.write_bytes(b"not a weight file")
        with pytest.raises(WeightsNotLoadedError) as not_loaded:
            client.publish_weights(now + 1000, broken)
        assert not_loaded.value.status == 502
        assert client.status().version == now
        # Put the server back in rotation with a file it loads, for the tests that follow.
        client.publish_weights(now + 1, v0)


def test_a_stream_cut_midway_is_a_clear_error_and_the_batch_comes_again(secure: Dict[str, object]) -> None:
    port = int(str(secure["url"]).rsplit(":", 1)[1])
    relay = CuttingRelay(port, limit=6000)
    try:
        cut = RolloutClient(f"https://127.0.0.1:{relay.port}", token=str(secure["token"]), cafile=str(secure["cafile"]),
                            retry_deadline=5.0)
        with cut, client_for(secure) as direct:
            with pytest.raises(BatchStreamBrokenError) as e:
                cut.next_batch(wait=60)
            broken = e.value
            assert broken.batch_id is not None and broken.received < 6000
            assert "delivers it again" in str(broken) and f"batch {broken.batch_id}" in str(broken)
            pulled = pull_until(direct, lambda b: b.batch_id == broken.batch_id)
            for b in pulled:
                direct.ack(b)
    finally:
        relay.close()
