"""The letters task as an AReaL-style agent: ``async def run(self, data, **extra_kwargs)`` asks the
model through an OpenAI client and returns the letters reward (letters.py) of its reply.

The engine runs it as ``rollout.workflow = "python:letters_agent:LettersAgent"`` with
``rollout.python.path = "examples/python-workflows"`` (the letters.conf dataset); every episode
gets the node's agent proxy as ``extra_kwargs["base_url"]`` and ``extra_kwargs["api_key"]``, and
each call through it is recorded token by token for training. It uses the openai package when it is
installed, else rollout_client's standard-library ``AsyncOpenAI``.
"""

from __future__ import annotations

from typing import Any, Dict

try:
    from openai import AsyncOpenAI
except ImportError:
    from rollout_client.areal.experimental.openai import AsyncOpenAI

from letters import reward


class LettersAgent:
    """One chat call with the item's ``messages``, scored against its ``target`` letter."""

    def __init__(self, max_tokens: int = 8, **kwargs: Any) -> None:
        self.max_tokens = max_tokens  # the reward reads the first 8 characters

    async def run(self, data: Dict[str, Any], **extra_kwargs: Any) -> float:
        client = AsyncOpenAI(base_url=extra_kwargs["base_url"], api_key=extra_kwargs["api_key"], max_retries=0)
        try:
            # The proxy serves its one model under any name.
            reply = await client.chat.completions.create(
                model="default", messages=data["messages"], max_tokens=self.max_tokens
            )
        finally:
            await client.close()
        text = reply.choices[0].message.content or ""
        prompt = data["messages"][-1]["content"]
        return float(reward(prompt, text, [], [], **data))
