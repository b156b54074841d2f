"""A pull through the gateway of a node that does not hold the batches: redirected (307) to the
gateway of the collector's node, so the batch crosses no node on its way; relayed when the client
does not follow or cannot reach that gateway."""

from __future__ import annotations

import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from conftest import FAST_ENGINE
from engine import Processes, free_port
from rollout_client import RolloutClient

# Every batch would cross nodes on the data plane, so one relayed shows in the counters.
ENGINE = FAST_ENGINE + ["rollout.large_payload_threshold=0"]


def metric(gateway: str, name: str) -> float:
    """The sum of a metric's samples on a node's /metrics (served without a token)."""
    with urllib.request.urlopen(gateway + "/metrics", timeout=30) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.fixture(scope="module")
def holder_and_other(processes: Processes, model_server: str) -> Iterator[Dict[str, Any]]:
    """node-1 holds the singletons (collector) and has a gateway; node-2 is only a gateway."""
    seed, other = sorted({free_port() for _ in range(4)})[:2]
    n1 = processes.node("redirect-1", model_server, "coordinator,rollout,gateway", seed, overrides=ENGINE)
    n2 = processes.node("redirect-2", model_server, "gateway", other, seed_port=seed, overrides=ENGINE)
    yield {"holder": n1.gateway, "other": n2.gateway}


def pull_and_ack(client: RolloutClient, n: int, seen: set) -> None:
    for _ in range(n):
        b = client.next_batch(wait=60)
        assert b is not None, "no batch within 60 s"
        for t in b.task_ids:
            assert t not in seen, f"task {t} delivered twice"
            seen.add(t)
        client.ack(b)


def test_a_pull_through_another_nodes_gateway_is_read_from_the_collectors_node(holder_and_other: Dict[str, Any]) -> None:
    holder, other = holder_and_other["holder"], holder_and_other["other"]
    redirected = metric(other, "rollout_gateway_pulls_redirected_total")
    seen: set = set()
    with RolloutClient(other, token_from_env=False) as c:
        pull_and_ack(c, 3, seen)
        assert c.pulls_from_holder >= 3 and c.redirects_fell_back == 0
        assert c._holder_gateway is not None and c._holder_gateway.url == holder
    # One pull was redirected; the later ones went straight to the collector's node.
    assert metric(other, "rollout_gateway_pulls_redirected_total") == redirected + 1
    # No batch crossed the data plane to node-2.
    assert metric(other, "rollout_batches_relayed_total") == 0


def test_a_client_that_does_not_follow_is_relayed(holder_and_other: Dict[str, Any]) -> None:
    other = holder_and_other["other"]
    relayed = metric(other, "rollout_batches_relayed_total")
    redirected = metric(other, "rollout_gateway_pulls_redirected_total")
    with RolloutClient(other, token_from_env=False, follow_redirects=False) as c:
        pull_and_ack(c, 2, set())
        assert c.pulls_from_holder == 0
    assert metric(other, "rollout_batches_relayed_total") >= relayed + 2
    assert metric(other, "rollout_gateway_pulls_redirected_total") == redirected


class RedirectingGateway:
    """Answers a pull that follows with a 307 to ``location`` (None: never); any other with 204
    (no batch yet)."""

    def __init__(self, location: Optional[str]) -> None:
        self.pulls: List[Tuple[str, bool, str]] = []
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                follows = self.headers.get("X-Rollout-Follow-Redirect") == "1"
                gateway.pulls.append((self.path, follows, self.headers.get("Authorization") or ""))
                if follows and location is not None:
                    body = b'{"read_from": "elsewhere"}'
                    self.send_response(307)
                    self.send_header("Location", location + self.path)
                else:
                    body = b""
                    self.send_response(204)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_holders_gateway_that_cannot_be_reached_sends_the_pull_back_through_the_contact_point() -> None:
    gone = f"http://127.0.0.1:{free_port()}"
    g = RedirectingGateway(gone)
    try:
        with RolloutClient(g.url, token="secret-token", token_from_env=False, lease=None) as c:
            assert c.next_batch(wait=0) is None
            assert c.redirects_fell_back == 1
            # Followed, refused, pulled again at the contact point without following (relayed there).
            assert [follows for _, follows, _ in g.pulls] == [True, False]
            assert all(auth == "Bearer secret-token" for _, _, auth in g.pulls)
            # A minute without following: the next pull asks for no redirect at all.
            assert c.next_batch(wait=0) is None
            assert [follows for _, follows, _ in g.pulls] == [True, False, False]
    finally:
        g.close()


def test_a_redirect_is_followed_with_the_token_to_the_holders_gateway() -> None:
    holder = RedirectingGateway(None)
    contact = RedirectingGateway(holder.url)
    try:
        with RolloutClient(contact.url, token="secret-token", token_from_env=False, lease=None) as c:
            assert c.next_batch(wait=0) is None
            assert c.pulls_from_holder == 1 and c.redirects_fell_back == 0
            # The holder's gateway got the same pull, with the token, and is asked first from now on.
            assert holder.pulls[0][0] == contact.pulls[0][0]
            assert holder.pulls[0][1:] == (False, "Bearer secret-token")
            assert c.next_batch(wait=0) is None
            assert len(contact.pulls) == 1
            assert [follows for _, follows, _ in holder.pulls] == [False, True]
    finally:
        contact.close()
        holder.close()
