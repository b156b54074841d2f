"""rollout_client.areal: AReaL's workflow names with AReaL's signatures, defaults and semantics.

No engine is needed: every test runs in this process (one runs a child Python without torch).
Every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import inspect
import logging
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

from rollout_client import areal
from rollout_client.areal import (
    AsyncRewardWrapper,
    GenerationHyperparameters,
    InferenceEngine,
    InteractionWithTokenLogpReward,
    ModelRequest,
    ModelResponse,
    RolloutWorkflow,
    WorkflowContext,
    apply_chat_template,
    concat_padded_tensors,
    from_gconfig,
    import_from_string,
    stats_tracker,
    workflow_context,
)
from rollout_client.areal.api.cli_args import ENGINE_ONLY_GCONFIG_KEYS, UnknownGenerationKeyError, UnsupportedApiFormatError
from rollout_client.areal.api.io_struct import StopTokensError
from rollout_client.areal.api.reward_api import RewardExecutorShutDownError
from rollout_client.areal.experimental.openai.types import MissingModelResponseError
from rollout_client.areal.utils.stats_tracker import TensorStatsUnsupportedError

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (Debian: python3-torch)")

ROOT = Path(__file__).resolve().parents[3]
CLIENT = Path(__file__).resolve().parents[1]
DEADLINE = 10.0  # seconds: no test waits longer for anything


def run(coro: Any, deadline: float = DEADLINE) -> Any:
    """Run ``coro`` on a new event loop, failing the test if it takes longer than ``deadline``."""
    return asyncio.run(asyncio.wait_for(coro, timeout=deadline))


@pytest.fixture(autouse=True)
def clean_state():
    stats_tracker.reset()
    yield
    stats_tracker.reset()


def params(fn: Any) -> Dict[str, Any]:
    """Parameter name -> default (inspect.Parameter.empty when required), in order."""
    return {n: p.default for n, p in inspect.signature(fn).parameters.items()}


# --- signatures and defaults ---------------------------------------------------------------------


def test_every_name_is_importable_from_its_areal_path_under_rollout_client_areal() -> None:
    import rollout_client.areal.api as api
    import rollout_client.areal.api.cli_args as cli_args
    import rollout_client.areal.api.engine_api as engine_api
    import rollout_client.areal.api.io_struct as io_struct
    import rollout_client.areal.api.reward_api as reward_api
    import rollout_client.areal.api.workflow_api as workflow_api
    import rollout_client.areal.experimental.openai.types as types
    import rollout_client.areal.infra.workflow_context as wc
    import rollout_client.areal.utils as utils
    import rollout_client.areal.utils.data as data
    import rollout_client.areal.utils.dynamic_import as dynamic_import
    import rollout_client.areal.utils.hf_utils as hf_utils
    import rollout_client.areal.utils.perf_tracer as perf_tracer

    assert api.RolloutWorkflow is workflow_api.RolloutWorkflow is RolloutWorkflow
    assert api.InferenceEngine is engine_api.InferenceEngine
    assert api.ModelRequest is io_struct.ModelRequest and api.ModelResponse is io_struct.ModelResponse
    assert api.AsyncRewardWrapper is reward_api.AsyncRewardWrapper
    assert cli_args.GenerationHyperparameters is GenerationHyperparameters
    assert areal.workflow_context is wc and utils.stats_tracker is stats_tracker
    assert utils.logging.getLogger is areal.logging.getLogger
    assert data.concat_padded_tensors is concat_padded_tensors
    assert dynamic_import.import_from_string is import_from_string
    assert hf_utils.apply_chat_template is apply_chat_template
    assert types.InteractionWithTokenLogpReward is InteractionWithTokenLogpReward
    assert callable(perf_tracer.trace_session) and callable(perf_tracer.session_context)
    assert set(areal.__all__) <= set(dir(areal))


def test_model_request_has_arealS_fields_defaults_and_copy() -> None:
    names = [f.name for f in dataclasses.fields(ModelRequest)]
    assert names == ["rid", "input_ids", "gconfig", "metadata", "tokenizer", "image_data", "processor", "vision_msg_vllm"]
    a, b = ModelRequest(), ModelRequest()
    assert a.rid != b.rid and len(a.rid) == 36  # a fresh uuid4 string each
    assert a.input_ids == [] and a.metadata == {} and a.image_data == [] and a.tokenizer is None
    assert a.gconfig == GenerationHyperparameters() and a.processor is None and a.vision_msg_vllm is None
    req = ModelRequest(rid="r", input_ids=[1, 2], metadata={"k": 1}, tokenizer=object(), image_data=None)
    c = req.copy()
    assert c == req and c.tokenizer is req.tokenizer and c.image_data is None
    c.input_ids.append(3)
    c.metadata["k"] = 2
    c.gconfig.stop_token_ids.append(9)
    assert req.input_ids == [1, 2] and req.metadata == {"k": 1} and req.gconfig.stop_token_ids == []


class Tok:
    """A tokenizer double: one id per character (ord % 50 + 10), EOS 1, PAD 0."""

    eos_token_id = 1
    pad_token_id = 0

    def __init__(self, as_mapping: bool = False) -> None:
        self.as_mapping = as_mapping
        self.calls: List[Dict[str, Any]] = []

    def encode(self, text: str) -> List[int]:
        return [ord(ch) % 50 + 10 for ch in text]

    def decode(self, ids: List[int]) -> str:
        return "".join(chr(i + 40) for i in ids)

    def apply_chat_template(self, messages: List[Dict[str, Any]], tokenize: bool = True, **kwargs: Any) -> Any:
        self.calls.append(dict(kwargs, tokenize=tokenize))
        text = "".join(f"<{m['role']}>{m['content']}" for m in messages)
        if kwargs.get("add_generation_prompt"):
            text += "<assistant>"
        if not tokenize:
            return text
        ids = self.encode(text)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)} if self.as_mapping else ids


def test_model_response_fields_defaults_and_properties() -> None:
    names = [f.name for f in dataclasses.fields(ModelResponse)]
    assert names == [
        "input_tokens", "output_tokens", "output_logprobs", "output_versions", "stop_reason", "tokenizer",
        "input_images", "processor", "latency", "ttft", "itl", "routed_experts",
    ]
    r = ModelResponse()
    assert r.stop_reason == "stop" and r.latency == float("inf") and r.ttft == float("inf") and r.itl == []
    assert (r.input_len, r.output_len) == (0, 0)
    r = ModelResponse(input_tokens=[5, 6, 7], output_tokens=[8, 9, 1, 0], tokenizer=Tok())
    assert (r.input_len, r.output_len) == (3, 4)
    assert r.end_with_stop and r.output_tokens_without_stop == [8, 9]
    assert ModelResponse(output_tokens=[8, 9], stop_reason="length", tokenizer=Tok()).output_tokens_without_stop == [8, 9]
    with pytest.raises(StopTokensError, match="not EOS or PAD"):
        ModelResponse(output_tokens=[8, 9], stop_reason="stop", tokenizer=Tok()).output_tokens_without_stop
    with pytest.raises(StopTokensError, match="every output token"):
        ModelResponse(output_tokens=[1, 0], tokenizer=Tok()).output_tokens_without_stop
    with pytest.raises(ValueError, match="tokenizer is None"):
        ModelResponse(output_tokens=[1]).end_with_stop
    assert not ModelResponse(tokenizer=Tok()).end_with_stop


def test_generation_hyperparameters_have_arealS_fields_and_defaults() -> None:
    expected = {
        "n_samples": 1, "max_new_tokens": 16384, "min_new_tokens": 0, "max_tokens": 32768, "greedy": False,
        "top_p": 1.0, "top_k": 100_000_000, "temperature": 1.0, "stop_token_ids": [], "ignore_eos": False,
        "skip_special_tokens": True, "stop": None, "frequency_penalty": 0.0, "seed": None,
        "lora_name": "default_lora", "use_beam_search": False, "reward_normalization": False,
        "drop_incomplete_group": False,
    }
    g = GenerationHyperparameters()
    assert list(dataclasses.asdict(g)) == list(expected)
    assert dataclasses.asdict(g) == expected


def test_new_returns_an_updated_copy_and_refuses_unknown_fields() -> None:
    g = GenerationHyperparameters(n_samples=8, stop_token_ids=[5], temperature=0.7)
    h = g.new(n_samples=1)
    assert h is not g and h.n_samples == 1 and h.temperature == 0.7 and h.stop_token_ids == [5]
    assert g.n_samples == 8
    h.stop_token_ids.append(6)
    assert g.stop_token_ids == [5], "lists are copied, not shared"
    assert g.new() == g and g.new() is not g
    with pytest.raises(TypeError):
        g.new(no_such_field=1)


def test_new_with_stop_and_pad_token_ids_appends_pad_then_eos_once() -> None:
    g = GenerationHyperparameters(stop_token_ids=[7])
    assert g.new_with_stop_and_pad_token_ids(Tok()).stop_token_ids == [7, 0, 1]
    assert GenerationHyperparameters(stop_token_ids=[1, 0]).new_with_stop_and_pad_token_ids(Tok()).stop_token_ids == [1, 0]
    assert g.stop_token_ids == [7]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_openai_args_rename_and_leave_out_what_openai_lacks() -> None:
    g = GenerationHyperparameters(n_samples=4, max_new_tokens=64, top_k=20, stop=["</s>"], reward_normalization=True)
    records = Records()
    logging.getLogger("CLIArgs").addHandler(records)
    try:
        completions = g.to_openai_completions_args_dict()
    finally:
        logging.getLogger("CLIArgs").removeHandler(records)
    text = "\n".join(records.lines)
    assert completions == {"n": 4, "max_completion_tokens": 64, "top_p": 1.0, "temperature": 1.0, "stop": ["</s>"],
                           "frequency_penalty": 0.0, "seed": None}
    assert "top_k = 20" in text and "reward_normalization" not in text
    assert g.to_openai_responses_args_dict(exclude_args=["seed"])["max_output_tokens"] == 64
    assert "seed" not in g.to_openai_responses_args_dict(exclude_args=["seed"])
    assert g.to_openai_agents_model_settings_dict()["max_tokens"] == 64
    assert g.to_openai_args_dict() == completions
    with pytest.raises(UnsupportedApiFormatError):
        g.to_openai_args_dict(api_format="chat")


def gconfig_keys_in_docs() -> List[str]:
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text.split("### `gconfig`", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"^\| `gconfig\.([a-z_]+)` \|", section, re.M)


def test_from_gconfig_takes_every_key_of_the_engines_gconfig_table() -> None:
    keys = gconfig_keys_in_docs()
    assert len(keys) >= 19 and "n_samples" in keys and "reward_normalization_use_std" in keys
    field_names = {f.name for f in dataclasses.fields(GenerationHyperparameters)}
    assert set(keys) == field_names | ENGINE_ONLY_GCONFIG_KEYS, "the docs' gconfig keys are AReaL's plus the engine-only ones"
    g = from_gconfig({
        "n_samples": 8, "max_new_tokens": 1024, "temperature": 0.0, "stop_token_ids": (151643, 151645),
        "stop": ["</answer>"], "seed": 7, "reward_normalization_use_std": False, "drop_incomplete_group": True,
    })
    assert (g.n_samples, g.max_new_tokens, g.temperature, g.seed) == (8, 1024, 0.0, 7)
    assert g.stop_token_ids == [151643, 151645] and g.stop == ["</answer>"] and g.drop_incomplete_group
    assert g.top_p == 1.0 and g.lora_name == "default_lora"
    assert from_gconfig(None) == from_gconfig({}) == GenerationHyperparameters()


def test_from_gconfig_names_unknown_keys() -> None:
    with pytest.raises(UnknownGenerationKeyError, match="max_lenght, nsamples"):
        from_gconfig({"nsamples": 2, "max_lenght": 3, "top_p": 0.9})


def test_rollout_workflow_is_abstract_and_inference_engine_methods_raise_until_overridden() -> None:
    with pytest.raises(TypeError):
        RolloutWorkflow()  # type: ignore[abstract]
    assert list(params(RolloutWorkflow.arun_episode)) == ["self", "engine", "data"]
    assert inspect.iscoroutinefunction(RolloutWorkflow.arun_episode)
    assert inspect.iscoroutinefunction(InferenceEngine.agenerate)
    assert list(params(InferenceEngine.agenerate)) == ["self", "req"]
    e = InferenceEngine()
    with pytest.raises(NotImplementedError):
        e.get_version()
    with pytest.raises(NotImplementedError):
        run(e.agenerate(ModelRequest()))


# --- concat_padded_tensors -----------------------------------------------------------------------


def ragged(lib: Any, n: int, start: int) -> Dict[str, Any]:
    arange = lib.arange
    return {
        "input_ids": arange(start, start + n).reshape(1, n),
        "attention_mask": lib.ones((1, n), dtype=lib.bool_ if lib is np else torch.bool),
        "versions": arange(n).reshape(1, n) + 3,
        "logprobs": lib.full((1, n), -0.5),
        "rewards": lib.ones(1) * start,
        "names": [f"row{start}"],
        "tag": "first" if start == 0 else "later",
    }


def test_concat_padded_tensors_pads_numpy_rows_with_arealS_pad_values() -> None:
    out = concat_padded_tensors([ragged(np, 2, 0), ragged(np, 4, 10), ragged(np, 3, 20)])
    assert out["input_ids"].tolist() == [[0, 1, 0, 0], [10, 11, 12, 13], [20, 21, 22, 0]]
    assert out["attention_mask"].dtype == np.bool_
    assert out["attention_mask"].sum(axis=1).tolist() == [2, 4, 3]
    assert out["versions"].tolist() == [[3, 4, 0, 0], [3, 4, 5, 6], [3, 4, 5, 0]], "versions pad with 0, as AReaL"
    assert out["logprobs"][0].tolist() == [-0.5, -0.5, 0.0, 0.0]
    assert out["rewards"].tolist() == [0.0, 10.0, 20.0]
    assert out["names"] == ["row0", "row10", "row20"] and out["tag"] == "first"
    padded = concat_padded_tensors([ragged(np, 1, 0), ragged(np, 2, 5)], pad_value=-1)
    assert padded["versions"].tolist() == [[3, -1], [3, 4]] and padded["attention_mask"].tolist() == [[True, False], [True, True]]


def test_concat_padded_tensors_edge_cases() -> None:
    assert concat_padded_tensors([]) == {}
    one = ragged(np, 2, 0)
    assert concat_padded_tensors([one]) == one and concat_padded_tensors([one]) is not one
    with pytest.raises(ValueError, match=r"dict\[1\] has keys"):
        concat_padded_tensors([one, {"input_ids": one["input_ids"]}])
    with pytest.raises(ValueError, match="0-D"):
        concat_padded_tensors([{"r": np.array(1.0)}, {"r": np.array(2.0)}])
    mm = concat_padded_tensors([
        {"multi_modal_input": [{"img": 1}], "attention_mask": np.ones((1, 2), bool)},
        {"multi_modal_input": [{"img": 2}, {"img": 3}], "attention_mask": np.ones((2, 3), bool)},
    ])
    assert mm["multi_modal_input"] == [{"img": 1}, {"img": 2}, {"img": 3}] and mm["attention_mask"].shape == (3, 3)


@needs_torch
def test_concat_padded_tensors_pads_torch_rows_and_keeps_dtypes() -> None:
    out = concat_padded_tensors([ragged(torch, 2, 0), ragged(torch, 4, 10)])
    assert isinstance(out["input_ids"], torch.Tensor) and out["input_ids"].dtype == torch.int64
    assert out["input_ids"].tolist() == [[0, 1, 0, 0], [10, 11, 12, 13]]
    assert out["attention_mask"].dtype == torch.bool and out["attention_mask"].sum(dim=1).tolist() == [2, 4]
    assert out["versions"].tolist() == [[3, 4, 0, 0], [3, 4, 5, 6]]
    assert out["logprobs"].dtype == torch.float32 and out["rewards"].tolist() == [0.0, 10.0]
    three_d = concat_padded_tensors([{"x": torch.ones(1, 2, 3)}, {"x": torch.ones(1, 3, 1)}], pad_value=7)
    assert three_d["x"].shape == (2, 3, 3) and three_d["x"][0, 2, 0].item() == 7 and three_d["x"][1, 0, 2].item() == 7
    with pytest.raises(TypeError, match="mixes torch tensors and numpy arrays"):
        concat_padded_tensors([{"x": torch.ones(1, 2)}, {"x": np.ones((1, 2))}])


# --- AsyncRewardWrapper --------------------------------------------------------------------------


def test_async_reward_wrapper_signature_and_defaults() -> None:
    assert params(AsyncRewardWrapper.__init__) == {
        "self": inspect.Parameter.empty, "reward_fn": inspect.Parameter.empty,
        "timeout_seconds": 15, "max_workers": None, "max_retries": 3,
    }
    w = AsyncRewardWrapper(lambda: 1.0)
    assert w.timeout_seconds == 15 and w.max_retries == 3 and w.max_workers >= 1
    assert AsyncRewardWrapper(lambda: 0, max_workers=w.max_workers)._executors[w.max_workers] is w._executors[w.max_workers]


def test_the_reward_gets_its_arguments_and_runs_off_the_event_loop() -> None:
    seen: Dict[str, Any] = {}

    def reward(prompt: str, completions: str, prompt_ids: List[int], completion_ids: List[int], **data: Any) -> float:
        seen.update(prompt=prompt, completion=completions, ids=(prompt_ids, completion_ids), data=data,
                    thread=threading.current_thread().name)
        return 0.75

    w = AsyncRewardWrapper(reward, max_workers=2)
    assert run(w("p", "c", [1], [2], answer="42")) == 0.75
    assert seen["data"] == {"answer": "42"} and seen["ids"] == ([1], [2])
    assert seen["thread"] != threading.current_thread().name


def test_a_timed_out_attempt_is_retried_and_the_last_timeout_gives_int_zero() -> None:
    release = threading.Event()
    calls: List[float] = []

    def slow_then_fast() -> float:
        calls.append(time.monotonic())
        if len(calls) == 1:
            release.wait(DEADLINE)  # outlives its 0.1 s attempt; released at the end of the test
            return -1.0
        return 0.5

    try:
        assert run(AsyncRewardWrapper(slow_then_fast, timeout_seconds=0.1, max_workers=4, max_retries=1)()) == 0.5
        assert len(calls) == 2

        def always_slow() -> float:
            release.wait(DEADLINE)
            return 1.0

        started = time.monotonic()
        value = run(AsyncRewardWrapper(always_slow, timeout_seconds=0.05, max_workers=4, max_retries=2)())
        assert value == 0 and type(value) is int
        assert 0.15 <= time.monotonic() - started < DEADLINE / 2, "three attempts of 0.05 s each"
    finally:
        release.set()


def test_an_exception_is_retried_and_the_last_one_propagates() -> None:
    calls: List[int] = []

    def flaky() -> float:
        calls.append(1)
        if len(calls) < 3:
            raise ValueError("not yet")
        return 1.0

    assert run(AsyncRewardWrapper(flaky, max_workers=2, max_retries=3)()) == 1.0 and len(calls) == 3
    calls.clear()

    def broken() -> float:
        calls.append(1)
        raise KeyError("answer")

    with pytest.raises(KeyError, match="answer"):
        run(AsyncRewardWrapper(broken, max_workers=2, max_retries=2)())
    assert len(calls) == 3, "max_retries + 1 attempts"
    calls.clear()
    with pytest.raises(KeyError):
        run(AsyncRewardWrapper(broken, max_workers=2, max_retries=0)())
    assert len(calls) == 1


def test_a_timeout_error_raised_by_the_function_counts_as_a_timeout() -> None:
    def raises_timeout() -> float:
        raise TimeoutError("slow service")

    assert run(AsyncRewardWrapper(raises_timeout, max_workers=2, max_retries=1)()) == 0


def test_shutdown_all_stops_existing_wrappers_and_new_ones_get_a_new_pool() -> None:
    old = AsyncRewardWrapper(lambda: 1.0, max_workers=3)
    AsyncRewardWrapper.shutdown_all(wait=True)
    with pytest.raises(RewardExecutorShutDownError):
        run(old())
    assert run(AsyncRewardWrapper(lambda: 2.0, max_workers=3)()) == 2.0


# --- stats_tracker -------------------------------------------------------------------------------


def test_scalars_go_to_the_scope_and_repeated_keys_average_with_a_count() -> None:
    stats_tracker.get("rollout").scalar(reward=1.0, num_turns=2)
    stats_tracker.get("rollout").scalar(reward=0)
    stats_tracker.get("eval-rollout").scalar(reward=np.float32(0.5))
    assert stats_tracker.get("rollout") is stats_tracker.get("rollout")
    exported = stats_tracker.get("rollout").export(reset=False)
    assert exported == {"rollout/reward": 0.5, "rollout/reward__count": 2, "rollout/num_turns": 2.0, "rollout/num_turns__count": 1}
    assert stats_tracker.export_all(reset=False)["eval-rollout/reward"] == 0.5
    assert stats_tracker.drain() == {"rollout": {"reward": [1.0, 0.0], "num_turns": [2.0]}, "eval-rollout": {"reward": [0.5]}}
    assert stats_tracker.drain() == {}, "drain clears"


def test_scopes_record_timing_and_the_default_tracker() -> None:
    t = stats_tracker.get("rollout")
    with t.scope("judge"):
        t.scalar(score=3)
    with t.record_timing("reward"):
        pass
    stats_tracker.scalar(loose=1)
    drained = stats_tracker.drain()
    assert drained["rollout"]["judge/score"] == [3.0]
    assert list(drained["rollout"]) == ["judge/score", "timeperf/reward"] and drained["rollout"]["timeperf/reward"][0] >= 0
    assert drained[""] == {"loose": [1.0]}


def test_a_non_number_records_nothing_and_tensor_stats_are_refused() -> None:
    t = stats_tracker.get("rollout")
    with pytest.raises((TypeError, ValueError)):
        t.scalar(reward=1.0, bad="x")
    assert stats_tracker.drain() == {}
    with pytest.raises(TensorStatsUnsupportedError):
        t.stat("mask", x=1)
    with pytest.raises(TensorStatsUnsupportedError):
        stats_tracker.denominator(mask=1)
    with pytest.raises(ValueError, match="reduce_group"):
        t.scalar(reduce_group=object(), x=1)


def test_reset_clears_values_but_a_kept_tracker_goes_on_recording() -> None:
    kept = stats_tracker.get("rollout")
    kept.scalar(reward=1)
    stats_tracker.reset()
    assert stats_tracker.drain() == {}
    kept.scalar(reward=2)
    assert stats_tracker.drain() == {"rollout": {"reward": [2.0]}}


# --- workflow_context ----------------------------------------------------------------------------


def test_workflow_context_defaults_to_training() -> None:
    assert workflow_context.get() == WorkflowContext(is_eval=False, task_id=None, sample_idx=None)
    assert workflow_context.stat_scope() == "rollout"
    with workflow_context.use(WorkflowContext(is_eval=True, task_id=3)):
        assert workflow_context.stat_scope() == "eval-rollout" and workflow_context.get().task_id == 3
    assert workflow_context.stat_scope() == "rollout"


def test_two_asyncio_tasks_each_see_their_own_context() -> None:
    async def episode(ctx: WorkflowContext, other_set: asyncio.Event, mine_set: asyncio.Event) -> List[Any]:
        workflow_context.set(ctx)
        mine_set.set()
        await asyncio.wait_for(other_set.wait(), DEADLINE)  # the other task has set its context too
        await asyncio.sleep(0)
        stats_tracker.get(workflow_context.stat_scope()).scalar(reward=ctx.sample_idx)
        return [workflow_context.get(), workflow_context.stat_scope()]

    async def main() -> List[List[Any]]:
        a, b = asyncio.Event(), asyncio.Event()
        train = WorkflowContext(is_eval=False, task_id=1, sample_idx=0)
        evaluation = WorkflowContext(is_eval=True, task_id=2, sample_idx=1)
        results = await asyncio.gather(episode(train, b, a), episode(evaluation, a, b))
        assert workflow_context.get() == WorkflowContext(), "the tasks' contexts do not leak to their creator"
        return results

    (ctx_a, scope_a), (ctx_b, scope_b) = run(main())
    assert (ctx_a.task_id, scope_a) == (1, "rollout") and (ctx_b.task_id, scope_b) == (2, "eval-rollout")
    assert stats_tracker.drain() == {"rollout": {"reward": [0.0]}, "eval-rollout": {"reward": [1.0]}}


# --- logging, import_from_string, apply_chat_template --------------------------------------------


def test_get_logger_returns_one_configured_logger_per_name() -> None:
    log = areal.logging.getLogger("PortedWorkflow")
    assert log is areal.logging.getLogger("PortedWorkflow") and len(log.handlers) == 1
    assert areal.logging.getLogger().name == "plain"
    with pytest.raises(ValueError):
        areal.logging.getLogger("x", type_="fancy")


def test_import_from_string_resolves_and_names_what_failed() -> None:
    assert import_from_string("os.path.join") is __import__("os").path.join
    with pytest.raises(ValueError):
        import_from_string("nodots")
    with pytest.raises(ValueError):
        import_from_string("")
    with pytest.raises(ImportError, match="no_such_module_xyz"):
        import_from_string("no_such_module_xyz.f")
    with pytest.raises(AttributeError, match="'os' has no attribute 'nope'"):
        import_from_string("os.nope")


def test_apply_chat_template_normalises_a_mapping_result_to_ids() -> None:
    messages = [{"role": "user", "content": "hi"}]
    plain, mapping = Tok(), Tok(as_mapping=True)
    ids = apply_chat_template(plain, messages, tokenize=True, add_generation_prompt=True, enable_thinking=False)
    assert apply_chat_template(mapping, messages, add_generation_prompt=True, enable_thinking=False) == ids
    assert isinstance(ids, list) and plain.calls[0] == {"add_generation_prompt": True, "enable_thinking": False, "tokenize": True}
    assert apply_chat_template(mapping, messages, tokenize=False) == "<user>hi"


# --- interactions --------------------------------------------------------------------------------


def test_interaction_fields_and_ids_without_torch() -> None:
    names = [f.name for f in dataclasses.fields(InteractionWithTokenLogpReward)]
    assert names == [
        "model_response", "reward", "original_reward", "parent", "chat_template_type", "_cache", "messages",
        "output_message_list", "completion", "response", "input_data", "_interaction_id",
    ]
    i = InteractionWithTokenLogpReward()
    assert not i.has_tensor_data and i.api_type.value == "none" and i.chat_template_type == "hf"
    i.interaction_id = "abc"
    assert i.interaction_id == "abc"

    class Completion:
        id, created = "chatcmpl-1", 5

    c = InteractionWithTokenLogpReward(completion=Completion(), messages=[{"role": "user", "content": "q"}])
    assert c.interaction_id == "chatcmpl-1" and c.created_at == 5.0 and c.current_data == c.messages
    with pytest.raises(ValueError):
        c.interaction_id = "x"
    with pytest.raises(MissingModelResponseError):
        i.to_tensor_dict()


@needs_torch
def test_interaction_rows_have_arealS_keys_shapes_and_dtypes() -> None:
    first = InteractionWithTokenLogpReward(
        model_response=ModelResponse(input_tokens=[5, 6], output_tokens=[7, 8], output_logprobs=[-0.1, -0.2], output_versions=[4, 4]),
        reward=1.0, chat_template_type="concat",
    )
    row = first.to_tensor_dict()
    assert first.to_tensor_dict() is row, "cached"
    assert {k: (tuple(v.shape), v.dtype) for k, v in row.items()} == {
        "input_ids": ((1, 4), torch.int64), "loss_mask": ((1, 4), torch.int64), "logprobs": ((1, 4), torch.float32),
        "versions": ((1, 4), torch.int64), "turn_ids": ((1, 4), torch.int32), "attention_mask": ((1, 4), torch.bool),
        "rewards": ((1,), torch.float32), "original_rewards": ((1,), torch.float32),
    }
    assert row["versions"].tolist() == [[-1, -1, 4, 4]] and row["turn_ids"].tolist() == [[-1, -1, 0, 0]]
    child = InteractionWithTokenLogpReward(
        model_response=ModelResponse(input_tokens=[5, 6, 7, 8, 9], output_tokens=[10], output_logprobs=[-0.3], output_versions=[5]),
        parent=first, chat_template_type="concat",
    )
    crow = child.to_tensor_dict()
    assert crow["loss_mask"].tolist() == [[0, 0, 1, 1, 0, 1]]
    assert crow["versions"].tolist() == [[-1, -1, 4, 4, -1, 5]] and crow["turn_ids"].tolist() == [[-1, -1, 0, 0, -1, 1]]
    assert crow["rewards"].tolist() == [0.0] and crow["original_rewards"].tolist() == [0.0]
    batch = concat_padded_tensors([row, crow])
    assert batch["input_ids"].shape == (2, 6) and batch["attention_mask"].sum().item() == 10


# --- port check: AReaL's RLVR structure on our imports --------------------------------------------


def load_example(name: str = "rlvr") -> Any:
    path = ROOT / "examples" / "python-workflows" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


class CannedEngine(InferenceEngine):
    """Answers each request with canned output tokens: its logprobs are -0.1 * position, versions 7."""

    def __init__(self, outputs: List[List[int]]) -> None:
        self.outputs = list(outputs)
        self.requests: List[ModelRequest] = []

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        self.requests.append(req)
        await asyncio.sleep(0)
        out = self.outputs.pop(0)
        return ModelResponse(
            input_tokens=list(req.input_ids), output_tokens=out,
            output_logprobs=[-0.1 * (i + 1) for i in range(len(out))], output_versions=[7] * len(out),
            stop_reason="stop", tokenizer=req.tokenizer, latency=0.01, ttft=0.005,
        )

    def get_version(self) -> int:
        return 7


def exact_reward(prompt: str, completions: str, prompt_ids: List[int], completion_ids: List[int], **data: Any) -> float:
    return 1.0 if completion_ids[:-1] == data["answer_ids"] else 0.0


@needs_torch
def test_the_rlvr_port_produces_arealS_tensor_dict_against_a_fake_engine() -> None:
    rlvr = load_example("rlvr")
    tok = Tok()
    workflow = rlvr.RLVRWorkflow(reward_fn=exact_reward, gconfig=GenerationHyperparameters(n_samples=4, max_new_tokens=8), tokenizer=tok)
    engine = CannedEngine([[30, 31, 1], [30, 1]])
    data = {"messages": [{"role": "user", "content": "2+2?"}], "answer_ids": [30, 31]}

    async def two_episodes() -> List[Dict[str, Any]]:
        async def one(ctx: WorkflowContext) -> Dict[str, Any]:
            workflow_context.set(ctx)
            return await workflow.arun_episode(engine, data)

        return list(await asyncio.gather(one(WorkflowContext(task_id=1, sample_idx=0)),
                                         one(WorkflowContext(is_eval=True, task_id=2, sample_idx=0))))

    train, evaluation = run(two_episodes())
    prompt = tok.apply_chat_template(data["messages"], add_generation_prompt=True)
    req = engine.requests[0]
    assert req.input_ids == prompt and req.gconfig.n_samples == 1 and req.gconfig.stop_token_ids == [0, 1]
    assert req.tokenizer is tok and len(req.rid) == 32
    assert tok.calls[0]["enable_thinking"] is False
    p, n = len(prompt), 3
    assert {k: (tuple(v.shape), v.dtype) for k, v in train.items()} == {
        "input_ids": ((1, p + n), torch.int32), "loss_mask": ((1, p + n), torch.int32),
        "logprobs": ((1, p + n), torch.float32), "versions": ((1, p + n), torch.int32),
        "turn_ids": ((1, p + n), torch.int32), "attention_mask": ((1, p + n), torch.bool),
        "rewards": ((1,), torch.float32),
    }
    assert train["input_ids"][0].tolist() == prompt + [30, 31, 1]
    assert train["loss_mask"][0].tolist() == [0] * p + [1] * n
    assert train["versions"][0].tolist() == [-1] * p + [7] * n
    assert train["logprobs"][0, p:].tolist() == pytest.approx([-0.1, -0.2, -0.3])
    assert train["rewards"].tolist() == [1.0] and evaluation["rewards"].tolist() == [0.0]
    assert stats_tracker.drain() == {"rollout": {"reward": [1.0]}, "eval-rollout": {"reward": [0.0]}}
    group = concat_padded_tensors([train, evaluation])
    assert group["input_ids"].shape == (2, p + n) and group["attention_mask"].sum(dim=1).tolist() == [p + 3, p + 2]


@needs_torch
def test_the_multi_turn_port_retries_until_rewarded_and_discounts_per_retry() -> None:
    multi_turn = load_example("multi_turn")
    tok = Tok()
    workflow = multi_turn.MultiTurnWorkflow(exact_reward, GenerationHyperparameters(), tok, max_turns=3, turn_discount=0.5)
    retry = workflow.multi_turn_prompt_ids
    assert retry and retry[-len(tok.encode("<assistant>")):] == tok.encode("<assistant>")
    engine = CannedEngine([[30, 1], [31, 32, 1]])
    data = {"messages": [{"role": "user", "content": "q"}], "answer_ids": [31, 32]}
    row = run(workflow.arun_episode(engine, data))
    prompt = tok.apply_chat_template(data["messages"], add_generation_prompt=True)
    assert [r.input_ids for r in engine.requests] == [prompt, prompt + [30, 1] + retry]
    p, r = len(prompt), len(retry)
    assert row["input_ids"][0].tolist() == prompt + [30, 1] + retry + [31, 32, 1]
    assert row["turn_ids"][0].tolist() == [-1] * p + [0, 0] + [-1] * r + [1, 1, 1]
    assert row["loss_mask"][0].tolist() == [0] * p + [1, 1] + [0] * r + [1, 1, 1]
    assert row["versions"][0].tolist() == [-1] * p + [7, 7] + [-1] * r + [7, 7, 7]
    assert row["rewards"].tolist() == [0.5] and row["rewards"].shape == (1,)
    assert stats_tracker.drain() == {"rollout": {"reward": [0.5], "num_turns": [2.0]}}
    with pytest.raises(ValueError):
        multi_turn.MultiTurnWorkflow(exact_reward, GenerationHyperparameters(), tok, max_turns=0, turn_discount=1.0)


# --- installation --------------------------------------------------------------------------------


def test_the_package_imports_and_concatenates_numpy_without_torch_transformers_or_areal() -> None:
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'areal', 'openai', 'PIL'):\n"
        "    sys.modules[name] = None  # importing any of them now fails\n"
        f"sys.path.insert(0, {str(CLIENT)!r})\n"
        "import numpy as np\n"
        "from rollout_client.areal import concat_padded_tensors, GenerationHyperparameters, AsyncRewardWrapper\n"
        "import rollout_client.areal.experimental.openai.types\n"
        "out = concat_padded_tensors([{'a': np.ones((1, 1))}, {'a': np.ones((1, 2))}])\n"
        "print(out['a'].shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(2, 2)"


def test_the_wheel_holds_the_areal_package() -> None:
    spec = importlib.util.spec_from_file_location("rollout_build", CLIENT / "_build_backend" / "rollout_build.py")
    backend = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(backend)
    names = set(backend._package_files())
    for module in ("__init__", "api/__init__", "api/cli_args", "api/reward_api", "utils/stats_tracker",
                   "infra/workflow_context", "experimental/openai/types"):
        assert f"rollout_client/areal/{module}.py" in names
