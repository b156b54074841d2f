"""The letters task's reward in Python, with AReaL's reward_fn signature (letters.conf).

The first 8 characters of the completion (the special tokens ``<|...|>`` left out) score 0.6
for each lowercase letter and 0.4 for each that is the asked ``target``, divided by their count: "q" alone scores 1 when q was asked, "abcdefgh" 0.6, "Q" 0. It is the engine's own
letters reward (docs/demo.md), so the tiny built-in model learns it within a few dozen steps.
"""

import re

_SPECIAL = re.compile(r"<\|[^|<>]*\|>")


def reward(prompt, completions, prompt_ids, completion_ids, target=None, **data):
    if not isinstance(target, str) or len(target) != 1 or not "a" <= target <= "z":
        raise KeyError(f"the letters reward needs a lowercase letter under 'target', got {target!r}")
    text = _SPECIAL.sub("", completions)[:8]
    if not text:
        return 0.0
    lowercase = sum(1 for ch in text if "a" <= ch <= "z")
    hits = sum(1 for ch in text if ch == target)
    return (0.6 * lowercase + 0.4 * hits) / len(text)
