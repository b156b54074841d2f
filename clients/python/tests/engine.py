"""Real engine processes for the tests: model servers and cluster nodes, started from the engine's
jar (built by the README's Maven command; the tests never build it).

Every process is started in its own session, logs to a file, is waited for with a deadline, and is
always stopped (SIGTERM, then SIGKILL after a deadline) by whoever started it.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[3]
JAR = REPO / "modules" / "cli" / "target" / "rollout-cli.jar"
START_DEADLINE_S = 120.0
STOP_DEADLINE_S = 15.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_gloo_ranks(
    script: Path, args: Sequence[str], env: Dict[str, str], world: int = 2, deadline_s: float = 150.0
) -> List[str]:
    """Runs ``script`` as ``world`` torch.distributed ranks on this machine (RANK, WORLD_SIZE and a free
    MASTER_PORT on 127.0.0.1 set for each), waits for all of them within the deadline and returns
    their combined outputs by rank, asserting each exited 0. ``env`` replaces the process environment
    (pass ``dict(os.environ, ...)`` to extend it). Every rank is killed if any wait runs out."""
    port = free_port()
    procs = []
    for rank in range(world):
        rank_env = dict(env, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(
            [sys.executable, str(script), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=rank_env,
        ))
    outputs = []
    try:
        deadline = time.monotonic() + deadline_s
        for p in procs:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            outputs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    assert [p.returncode for p in procs] == [0] * world, "\n".join(outputs)
    return outputs


@functools.lru_cache(maxsize=1)
def java_home() -> str:
    """The JDK bin/find-jdk picks (>= 21)."""
    out = subprocess.run(
        ["bash", "-c", f"source {REPO / 'bin' / 'find-jdk'} && printf %s \"$JAVA_HOME\""],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return out.stdout.strip()


def rollout_command() -> List[str]:
    """``rollout`` as bin/rollout runs it, minus its rebuild: a small heap and quick start-up."""
    return [
        str(Path(java_home()) / "bin" / "java"), "-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--enable-native-access=ALL-UNNAMED", "-jar", str(JAR),
    ]


class Proc:
    """One started process with its log file."""

    def __init__(self, name: str, args: Sequence[str], log: Path, env: Optional[Dict[str, str]] = None) -> None:
        self.name = name
        self.log = log
        full_env = dict(os.environ)
        full_env.update(env or {})
        self._file = open(log, "wb")
        self.popen = subprocess.Popen(
            list(args), stdout=self._file, stderr=subprocess.STDOUT, env=full_env, start_new_session=True, cwd=REPO
        )

    def wait_for(self, pattern: str, deadline_s: float = START_DEADLINE_S) -> "re.Match[str]":
        """Waits until a line of the log matches ``pattern``; fails if the process exits first."""
        end = time.monotonic() + deadline_s
        rx = re.compile(pattern)
        while time.monotonic() < end:
            text = self.log.read_text(errors="replace")
            m = rx.search(text)
            if m:
                return m
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode} before '{pattern}':\n{text[-3000:]}")
            time.sleep(0.1)  # polling a log file for a line, bounded by the deadline above
        raise TimeoutError(f"{self.name}: no '{pattern}' within {deadline_s} s; log {self.log}")

    def kill(self) -> None:
        """SIGKILL: a crash."""
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(STOP_DEADLINE_S)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within the deadline."""
        try:
            if self.popen.poll() is None:
                self.popen.terminate()
                try:
                    self.popen.wait(STOP_DEADLINE_S)
                except subprocess.TimeoutExpired:
                    self.popen.kill()
                    self.popen.wait(STOP_DEADLINE_S)
        finally:
            self._file.close()


class Processes:
    """Starts processes and stops all of them, newest first."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: List[Proc] = []

    def start(self, name: str, args: Sequence[str], env: Optional[Dict[str, str]] = None) -> Proc:
        p = Proc(name, [*rollout_command(), *args], self.workdir / f"{name}.log", env)
        self.procs.append(p)
        return p

    def stop_all(self) -> None:
        errors = []
        for p in reversed(self.procs):
            try:
                p.stop()
            except Exception as e:  # keep stopping the others
                errors.append(e)
        self.procs.clear()
        if errors:
            raise errors[0]

    def demo_weights(self, directory: Path) -> Path:
        out = subprocess.run(
            [*rollout_command(), "demo-weights", str(directory)], capture_output=True, text=True, timeout=120,
            check=True, cwd=REPO,
        )
        return Path(out.stdout.strip().splitlines()[-1])

    def model_server(self, name: str, weights: Path) -> str:
        p = self.start(name, ["model-server", "--port", "0", "--weights", str(weights)])
        return p.wait_for(r"model server listening on http://(127\.0\.0\.1:\d+)").group(1)

    def node(
        self,
        name: str,
        servers: str,
        roles: str,
        port: int,
        seed_port: Optional[int] = None,
        extra: Sequence[str] = (),
        overrides: Sequence[str] = (),
        env: Optional[Dict[str, str]] = None,
    ) -> "Node":
        args = [
            "node", "--demo", "--name", name, "--port", str(port), "--roles", roles,
            "--seed-nodes", f"127.0.0.1:{seed_port or port}", "--gateway-port", "0", *extra,
            f"rollout.servers={servers}", f"rollout.fileroot={self.workdir / 'out'}",
            "rollout.dump_to_file=false", *overrides,
        ]
        p = self.start(name, args, env)
        if "gateway" in roles.split(","):
            m = p.wait_for(r"gateway listening on (https?://127\.0\.0\.1:\d+)")
            return Node(p, m.group(1))
        p.wait_for(r"node up:")
        return Node(p, None)


class Node:
    def __init__(self, proc: Proc, gateway: Optional[str]) -> None:
        self.proc = proc
        self.gateway = gateway


def make_tls(directory: Path, password: str) -> Dict[str, Path]:
    """A self-signed EC key store for 127.0.0.1 and its certificate as PEM, made with keytool."""
    keytool = str(Path(java_home()) / "bin" / "keytool")
    store = directory / "gateway.p12"
    pem = directory / "gateway.pem"
    subprocess.run(
        [keytool, "-genkeypair", "-alias", "gateway", "-keyalg", "EC", "-groupname", "secp256r1",
         "-dname", "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1", "-validity", "2",
         "-storetype", "PKCS12", "-keystore", str(store), "-storepass", password],
        check=True, capture_output=True, timeout=60,
    )
    cert = subprocess.run(
        [keytool, "-exportcert", "-rfc", "-alias", "gateway", "-keystore", str(store), "-storepass", password],
        check=True, capture_output=True, timeout=60,
    )
    pem.write_bytes(cert.stdout)
    return {"store": store, "pem": pem}


class CuttingRelay:
    """A TCP relay to ``upstream`` that closes both sides once ``limit`` bytes came back from it
    (to cut a response mid-way), or relays everything when ``limit`` is None."""

    def __init__(self, upstream_port: int, limit: Optional[int]) -> None:
        self.upstream_port = upstream_port
        self.limit = limit
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.port = int(self.server.getsockname()[1])
        self.cuts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=10)
            threading.Thread(target=self._pump, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, self.limit), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, limit: Optional[int]) -> None:
        sent = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if limit is not None and sent + len(data) >= limit:
                    dst.sendall(data[: limit - sent])
                    self.cuts += 1
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self._stop.set()
        self.server.close()
