#!/usr/bin/env python3
"""An agent in plain Python (standard library only): one episode per process, as the engine runs it.

The engine starts it once per episode with OPENAI_BASE_URL and OPENAI_API_KEY in the environment
and the episode's data item as JSON on stdin; every call to the base URL is recorded token by token
for training; the last line printed is the episode's reward (docs/agents.md).

This one asks the question of a template data item ({"question": ..., "answer": ...}) and scores
the reply 1.0 when its last number is the answer.
"""

import json
import os
import re
import sys
import urllib.request


def chat(messages):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "rollout", "messages": messages}).encode("utf-8"),
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        },
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        reply = json.load(response)
    return reply["choices"][0]["message"]["content"] or ""


def main():
    item = json.load(sys.stdin)
    text = chat([{"role": "user", "content": item["question"]}])
    numbers = re.findall(r"-?\d+", text)
    print("asked %r, got %r" % (item["question"], text), file=sys.stderr)
    print(1.0 if numbers and numbers[-1] == str(item["answer"]).strip() else 0.0)


if __name__ == "__main__":
    main()
