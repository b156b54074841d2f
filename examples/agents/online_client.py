#!/usr/bin/env python3
"""An online-mode client in plain Python (standard library only): it claims the sessions a run
opens, asks each session's question through the session's OpenAI-compatible base URL, and posts a
reward (docs/agents.md, "Online mode").

    python3 examples/agents/online_client.py --proxy http://127.0.0.1:8471 [--workers 4] [--idle 10]

It stops when no session has been waiting for --idle seconds (the run is over or paused), and
prints how many sessions it answered, how many the run closed before their reward (a run that has
taken its last batch closes the sessions still open: the proxy answers 404 session_not_found or 503
shutting_down), and how many failed for any other reason. The data item of each session is a template item
({"question": ..., "answer": ...}); the reward is 1.0 when the reply's last number is the answer.
"""

import argparse
import json
import re
import sys
import threading
import time
import urllib.error
import urllib.request


def post(url, body, key, timeout):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + key},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        text = response.read()
        return response.status, (json.loads(text) if text else None)


def closed_by_run(error):
    """True when the proxy says the session's episode is over: the run ended or cancelled it."""
    if error.code == 503:
        return True
    if error.code != 404:
        return False
    try:
        body = json.loads(error.read() or b"{}")
    except ValueError:
        return False
    return (body.get("error") or {}).get("code") == "session_not_found"


def answer_one(session):
    item = session.get("data") or {}
    question = item.get("question", "Say something.")
    _, reply = post(
        session["base_url"] + "/chat/completions",
        {"model": "rollout", "messages": [{"role": "user", "content": question}]},
        session["api_key"],
        120,
    )
    text = reply["choices"][0]["message"]["content"] or ""
    numbers = re.findall(r"-?\d+", text)
    reward = 1.0 if numbers and numbers[-1] == str(item.get("answer", "")).strip() else 0.0
    post(session["base_url"] + "/reward", {"reward": reward}, session["api_key"], 30)


def worker(args, counts, lock):
    last_work = time.monotonic()
    while time.monotonic() - last_work < args.idle:
        try:
            status, session = post(args.proxy + "/online/claim", {"timeout": 2}, args.admin_key, 30)
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)  # the run's proxy is not up yet, or has closed
            continue
        if status == 204 or session is None:
            continue
        try:
            answer_one(session)
            with lock:
                counts["answered"] += 1
        except urllib.error.HTTPError as e:
            kind = "closed" if closed_by_run(e) else "failed"
            with lock:
                counts[kind] += 1
            if kind == "failed":
                print("session %s failed: %s" % (session.get("session"), e), file=sys.stderr)
        except (urllib.error.URLError, ConnectionError, KeyError, ValueError) as e:
            with lock:
                counts["failed"] += 1
            print("session %s failed: %s" % (session.get("session"), e), file=sys.stderr)
        last_work = time.monotonic()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proxy", required=True, help="the proxy's URL, e.g. http://127.0.0.1:8471")
    parser.add_argument("--admin-key", default="areal-admin-key", help="rollout.agent.admin_api_key")
    parser.add_argument("--workers", type=int, default=4, help="sessions answered at once")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds without a session before stopping")
    args = parser.parse_args()
    args.proxy = args.proxy.rstrip("/")
    counts = {"answered": 0, "closed": 0, "failed": 0}
    lock = threading.Lock()
    threads = [threading.Thread(target=worker, args=(args, counts, lock)) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(
        "answered %d session(s), %d closed by the run before their reward, %d failed"
        % (counts["answered"], counts["closed"], counts["failed"])
    )
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
