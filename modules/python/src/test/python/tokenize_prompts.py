"""Reads {"prompts": [...]} on stdin; writes, per prompt, what EngineTokenizer gives (TokenizerEquivalenceTest)."""

import json
import sys

from rollout_client.areal import EngineTokenizer
from rollout_client.areal.utils.hf_utils import apply_chat_template

tok = EngineTokenizer()
out = []
for prompt in json.load(sys.stdin)["prompts"]:
    messages = [{"role": "user", "content": prompt}]
    chat = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, enable_thinking=False)
    out.append({
        "encode": tok.encode(prompt),
        "chat_text": tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
        "chat_ids": chat,
        "chat_ids_hf_utils": apply_chat_template(tok, messages, tokenize=True, add_generation_prompt=True),
        "call": tok(prompt)["input_ids"],
        "decode_chat": tok.decode(chat),
        "decode_chat_skip": tok.decode(chat, skip_special_tokens=True),
    })
json.dump({"eos": tok.eos_token_id, "pad": tok.pad_token_id, "vocab": tok.vocab_size, "rows": out}, sys.stdout)
