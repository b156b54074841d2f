"""RBATCH decoding, collate() against the Java golden files, split, torch, staleness."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest

from rollout_client import Batch, BatchFormatError, Group, read_batch, write_batch
from rollout_client.rbatch import StreamEnded

DATA = Path(__file__).parent / "data"


def golden() -> Batch:
    with open(DATA / "golden-batch.rbatch", "rb") as f:
        return read_batch(f)


def group(task_id: int, rows: int, width: int, head: int = 0, seed: int = 0) -> Group:
    r = np.random.default_rng(seed + task_id)
    mask = np.zeros((rows, width), dtype=bool)
    for i in range(rows):
        mask[i, : r.integers(1, width + 1)] = True
    return Group(
        task_id=task_id, attempt=0, slot_indices=tuple(range(rows)), slot_row_counts=(1,) * rows,
        dispatch_version=head, head_version=head, tail_version=head, completion_version=head,
        tensors={
            "input_ids": r.integers(0, 263, (rows, width)).astype(np.int32) * mask,
            "attention_mask": mask,
            "versions": np.where(mask, head, -1).astype(np.int32),
            "rewards": r.random(rows).astype(np.float32),
        },
    )


def test_the_java_golden_batch_decodes() -> None:
    b = golden()
    assert (b.batch_id, b.version, len(b)) == (42, 6, 3)
    assert [g.task_id for g in b] == [100, 101, 102]
    assert [g.attempt for g in b] == [0, 1, 0]
    assert [g.rows for g in b] == [3, 1, 2]
    assert [g.tensors["input_ids"].shape for g in b] == [(3, 5), (1, 9), (2, 2)]
    assert b.groups[0].tensors["rollout_reward"].shape == ()
    assert b.groups[0].tensors["position_ids"].dtype == np.int64
    assert list(b.staleness()) == [3, 2, 1]


def test_collate_agrees_with_javas_concat_padded_element_for_element() -> None:
    with open(DATA / "golden-collated.rbatch", "rb") as f:
        expected = read_batch(f).groups[0].tensors
    got = golden().collate()
    assert list(got) == list(expected)  # the same keys in the same order
    for key, want in expected.items():
        assert got[key].dtype == want.dtype, key
        assert got[key].shape == want.shape, key
        np.testing.assert_array_equal(got[key], want, err_msg=key)
    # The padding rules, spelled out: versions -1, masks False/0, the rest 0; row order = group order.
    assert got["input_ids"].shape == (6, 9)  # groups of widths 5, 9, 2 padded to 9
    assert (got["versions"][0:3, 5:] == -1).all() and (got["versions"][4:6, 2:] == -1).all()
    assert not got["attention_mask"][0:3, 5:].any() and (got["loss_mask"][0:3, 5:] == 0).all()
    assert (got["input_ids"][4:6, 2:] == 0).all() and (got["logprobs"][4:6, 2:] == 0).all()
    np.testing.assert_array_equal(got["input_ids"][3], golden().groups[1].tensors["input_ids"][0])
    assert got["rollout_reward"].shape == (3,)


def test_a_roundtrip_through_the_encoder_is_exact() -> None:
    b = golden()
    buf = io.BytesIO()
    n = write_batch(b, buf)
    assert n == (DATA / "golden-batch.rbatch").stat().st_size
    assert buf.getvalue() == (DATA / "golden-batch.rbatch").read_bytes()


def test_collate_of_one_group_returns_it_unchanged_and_of_none_an_empty_dict() -> None:
    b = golden()
    one = b.select(b.groups[:1]).collate()
    assert one["rollout_reward"].shape == ()  # as Java: a single dict is returned as it is
    assert Batch(1, 0, []).collate() == {}


def test_collate_refuses_groups_that_do_not_agree() -> None:
    g1, g2 = group(1, 2, 4), group(2, 2, 3)
    g2.tensors["input_ids"] = g2.tensors["input_ids"].astype(np.int64)
    with pytest.raises(ValueError, match="input_ids.*group 1"):
        Batch(1, 0, [g1, g2]).collate()
    del g2.tensors["rewards"]
    with pytest.raises(ValueError, match="missing \\['rewards'\\]"):
        Batch(1, 0, [g1, g2]).collate()


def test_truncated_and_malformed_streams_are_named() -> None:
    raw = (DATA / "golden-batch.rbatch").read_bytes()
    with pytest.raises(StreamEnded) as e:
        read_batch(io.BytesIO(raw[:1000]))
    assert "batch 42 group" in str(e.value) and e.value.received <= 1000
    with pytest.raises(BatchFormatError, match="magic"):
        read_batch(io.BytesIO(b"XBATCH" + raw[6:]))
    with pytest.raises(BatchFormatError, match="format version 2"):
        read_batch(io.BytesIO(raw[:6] + struct.pack("<H", 2) + raw[8:]))
    with pytest.raises(BatchFormatError, match="REND"):
        read_batch(io.BytesIO(raw[:-4] + b"NOPE"))
    bad_meta = raw[:24] + struct.pack("<I", 5) + b"{oops" + raw[24:]
    with pytest.raises(BatchFormatError, match="batch 42 group 0: malformed metadata"):
        read_batch(io.BytesIO(bad_meta))


def test_split_balances_tokens_and_keeps_groups_whole() -> None:
    groups = [group(i, rows=4, width=w) for i, w in enumerate([30, 5, 20, 10, 25, 8, 12])]
    b = Batch(9, 3, groups)
    shards = b.split(3)
    assert sorted(t for s in shards for t in s.task_ids) == list(range(7))
    for s in shards:
        assert s.task_ids == sorted(s.task_ids)  # batch order within a shard
        assert s.ack_task_ids == tuple(range(7))  # each shard acknowledges the whole batch
        assert (s.batch_id, s.version) == (9, 3)
    loads = [s.tokens for s in shards]
    assert max(loads) - min(loads) <= max(g.tokens for g in groups)
    assert sum(loads) == b.tokens
    assert [len(s) for s in Batch(1, 0, groups[:2]).split(4)].count(0) == 2
    with pytest.raises(ValueError):
        b.split(0)


def test_to_torch_keeps_dtypes_unless_asked() -> None:
    torch = pytest.importorskip("torch")
    b = golden()
    t = b.to_torch()
    assert t["input_ids"].dtype == torch.int32 and t["attention_mask"].dtype == torch.bool
    assert t["position_ids"].dtype == torch.int64 and t["logprobs"].dtype == torch.float32
    np.testing.assert_array_equal(t["versions"].numpy(), b.collate()["versions"])
    wide = b.to_torch(device="cpu", int64=True)
    assert wide["input_ids"].dtype == torch.int64 and wide["attention_mask"].dtype == torch.bool


def test_a_large_group_decodes_into_one_populated_block() -> None:
    big = group(5, rows=8, width=40_000)  # 8 x 40k x (4 + 1 + 4) bytes + rewards: ~2.9 MB
    small = group(6, rows=2, width=3)
    buf = io.BytesIO()
    write_batch(Batch(3, 1, [big, small]), buf)
    buf.seek(0)
    b = read_batch(buf)
    for want, got in zip([big, small], b.groups):
        assert list(got.tensors) == list(want.tensors)
        for k, a in want.tensors.items():
            np.testing.assert_array_equal(got.tensors[k], a)
            assert got.tensors[k].flags.writeable and got.tensors[k].flags.c_contiguous
            assert got.tensors[k].flags.aligned
    for a in b.groups[0].tensors.values():  # the large group's block: every tensor 64-byte aligned
        assert a.ctypes.data % 64 == 0
    ids = b.groups[0].tensors["input_ids"]
    ids[0, 0] = -7  # writable, and only this tensor changes
    assert b.groups[0].tensors["input_ids"][0, 0] == -7 and b.groups[0].tensors["versions"][0, 0] != -7
    torch = pytest.importorskip("torch")
    assert torch.from_numpy(ids)[0, 0].item() == -7


def test_recycled_blocks_are_decoded_into_again() -> None:
    from rollout_client.rbatch import BlockPool

    big = group(7, rows=8, width=40_000)
    buf = io.BytesIO()
    write_batch(Batch(4, 1, [big, group(8, 2, 3)]), buf)
    pool = BlockPool(64 << 20)
    first = read_batch(io.BytesIO(buf.getvalue()), pool)
    block = first.groups[0].block
    assert block is not None and first.groups[1].block is None  # only large groups get a block
    pool.give(block)
    pool.give(block)  # twice: kept once
    assert pool.held_bytes == len(block)
    second = read_batch(io.BytesIO(buf.getvalue()), pool)
    assert second.groups[0].block is block and pool.held_bytes == 0
    for k, a in big.tensors.items():
        np.testing.assert_array_equal(second.groups[0].tensors[k], a)
    assert BlockPool(1).take(1 << 20) is None
