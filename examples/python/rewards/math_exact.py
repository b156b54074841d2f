"""Exact-match math reward: 1.0 when the completion's final answer equals data["answer"], else 0.0.

Use it as reward_fn = "python:math_exact:reward" with rollout.python.path pointing at this directory
(docs/python-rewards.md). The final answer is the content of the last \\boxed{...} in the completion,
or else the last number in it. The expected answer may be a number or a string; a GSM8K-style
answer ("... #### 42") counts from its "####". Two answers match when their normalised texts are
equal (spaces, "$", a trailing ".", thousands commas and surrounding \\text{} removed) or when both
are numbers of equal value ("3.50" matches "3.5", "1,000" matches "1000").
"""

import re
from fractions import Fraction

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def last_boxed(text):
    """The content of the last \\boxed{...} (braces balanced), or None."""
    start = text.rfind("\\boxed")
    while start >= 0:
        i = start + len("\\boxed")
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            depth = 0
            for j in range(i, len(text)):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        return text[i + 1 : j]
        start = text.rfind("\\boxed", 0, start)
    return None


def final_answer(completion):
    """The completion's final answer: the last \\boxed{...}, else the last number, else None."""
    boxed = last_boxed(completion)
    if boxed is not None:
        return boxed
    numbers = _NUMBER.findall(completion)
    return numbers[-1] if numbers else None


def normalise(answer):
    text = str(answer).strip()
    if "####" in text:
        text = text.split("####")[-1]
    text = re.sub(r"\\text\{([^}]*)\}", r"\1", text)
    text = text.replace("$", "").replace(" ", "").rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", text):
        text = text.replace(",", "")
    return text


def _number(text):
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def matches(predicted, expected):
    a, b = normalise(predicted), normalise(expected)
    if a == b:
        return True
    x, y = _number(a), _number(b)
    return x is not None and y is not None and x == y


def reward(prompt, completions, prompt_ids, completion_ids, answer=None, **data):
    """AReaL's reward_fn signature; the data item must hold "answer"."""
    if answer is None:
        raise KeyError("the data item has no 'answer'")
    predicted = final_answer(completions)
    if predicted is None:
        return 0.0
    return 1.0 if matches(predicted, answer) else 0.0
