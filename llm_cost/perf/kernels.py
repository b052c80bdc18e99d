"""The launch rules of the kernels that decide a step's time: how many thread blocks a decode
attention kernel runs (split-KV, flash-decoding).

A decode attention kernel without split-KV (PyTorch's eager SDPA, which the h200 profile measured)
runs one thread block per (sequence, KV head): at batch 1 a Llama-3-8B step has 8 blocks for 132
SMs and reads the KV cache far below the bandwidth. FlashAttention's split-KV kernels (and
FlashInfer's, which vLLM, SGLang and TensorRT-LLM run) also split each sequence's keys into
blocks, so that a batch-1 decode fills the GPU.

The split rule is FlashAttention-2's, Dao-AILab/flash-attention ``csrc/flash_attn/flash_api.cpp``
(``num_splits_heuristic`` and ``set_params_splitkv``; the same rule, without the eligibility check
and with an L2 exception for very long keys, is in ``hopper/heuristics.h`` for FlashAttention-3):

* GQA decode (one query per sequence, more query than KV heads) runs the query heads of one KV
  head as the rows of one block (``seqlenq_ngroups_swapped`` in ``mha_fwd``): heads = KV heads,
  rows = query heads per KV head; otherwise heads = query heads, rows = new tokens per sequence;
* key block ``block_n`` = 256 for head dim <= 64, 128 for <= 128, else 64; row block 64;
  n_blocks = ceil(keys / block_n), m_blocks = ceil(rows / 64);
* blocks without a split: B = batch x heads x m_blocks; slots: 2 x SMs (128 threads per block);
* if B >= 0.8 x slots: one split. Else, for s = 1 .. min(128, slots, n_blocks), the efficiency of
  the waves e(s) = w / ceil(w), w = B s / slots, skipping an s whose keys per split equal those of
  s - 1 (ceil(n/s) = ceil(n/(s-1)): the same split); the chosen s is the smallest eligible one
  with e(s) >= 0.85 x max e.

The thread blocks in flight are then B x s, the ``x`` of the calibrated model's decode-attention
efficiency (:func:`llm_cost.perf.calibrated.kv_efficiency`). The combine of the splits' partial
results (fp32, s x rows x heads x head dim per sequence) is small beside the KV reads and not
counted.
"""

from __future__ import annotations

import math
from functools import lru_cache

from llm_cost.core.records import record
from llm_cost.core.types import Engine, OpKind
from llm_cost.workload.step import Operator

__all__ = [
    "SPLIT_KV_ENGINES",
    "MAX_SPLITS",
    "BLOCKS_PER_SM",
    "fa_num_splits",
    "fa_key_block",
    "DecodeLaunch",
    "fa_decode_launch",
    "attention_blocks",
]

#: Whether each engine's decode attention splits a sequence's keys over thread blocks: vLLM
#: (FlashAttention-2/3 and FlashInfer backends), SGLang (FlashInfer, FA3), TensorRT-LLM (XQA and
#: its multi-block mode) and llama.cpp (its flash-decoding kernel, ``fattn-vec``) do; PyTorch's eager
#: SDPA and gpt-fast's compiled attention run one block per (sequence, KV head).
SPLIT_KV_ENGINES: dict[Engine, bool] = {
    Engine.VLLM: True,
    Engine.SGLANG: True,
    Engine.TRTLLM: True,
    Engine.LLAMACPP: True,
    Engine.PYTORCH_EAGER: False,
    Engine.TORCH_COMPILE: False,
}

#: FlashAttention's largest split count (``TORCH_CHECK(params.num_splits <= 128)``).
MAX_SPLITS = 128
#: Thread blocks per SM the heuristic counts (``dprops->multiProcessorCount * 2``: 128 threads a block).
BLOCKS_PER_SM = 2
#: Rows of queries per thread block of the split-KV kernel (``kBlockM = 64``).
ROW_BLOCK = 64


@lru_cache(maxsize=4096)  # a pure function of its counts, asked again for each step of a sweep
def fa_num_splits(blocks: int, slots: int, n_blocks: int, max_splits: int = MAX_SPLITS) -> int:
    """FlashAttention-2's ``num_splits_heuristic``: the splits of each (sequence, head, row block)'s
    keys for ``blocks`` thread blocks without a split, ``slots`` blocks the GPU runs at once (2 x
    SMs) and ``n_blocks`` key blocks per sequence (see the module docstring for the rule and its
    source). ``blocks``, ``slots`` >= 1."""
    if blocks >= 0.8 * slots:
        return 1
    top = min(max_splits, slots, n_blocks)
    eligible = [s for s in range(1, top + 1) if s == 1 or -(-n_blocks // s) != -(-n_blocks // (s - 1))]
    if not eligible:
        return 1
    waves = {s: blocks * s / slots for s in eligible}
    efficiency = {s: w / math.ceil(w) for s, w in waves.items()}
    best = max(efficiency.values())
    return next(s for s in eligible if efficiency[s] >= 0.85 * best)


def fa_key_block(head_dim: int) -> int:
    """Keys per block of FlashAttention-2's split-KV kernel: 256 (head dim <= 64), 128 (<= 128), 64."""
    return 256 if head_dim <= 64 else 128 if head_dim <= 128 else 64


@record
class DecodeLaunch:
    """The thread blocks of one split-KV attention launch: ``heads`` x ``m_blocks`` per sequence
    without a split, ``n_blocks`` key blocks per sequence, ``splits`` chosen, ``blocks`` in flight in
    all (sequences x heads x m_blocks x splits)."""

    heads: int
    m_blocks: int
    n_blocks: int
    splits: int
    blocks: int


def fa_decode_launch(
    batch: int, heads: int, kv_heads: int, queries: float, keys: float, head_dim: int, sm_count: int
) -> DecodeLaunch:
    """The launch FlashAttention-2 chooses for ``batch`` sequences of ``heads`` query and
    ``kv_heads`` KV heads, ``queries`` new tokens and ``keys`` keys per sequence (averages: rounded
    up), head dim ``head_dim``, on a GPU of ``sm_count`` SMs (module docstring)."""
    q_len = max(1, math.ceil(queries))
    if q_len == 1 and heads > kv_heads:  # seqlenq_ngroups_swapped: a KV head's query heads are the rows
        launch_heads, rows = kv_heads, heads // max(kv_heads, 1)
    else:
        launch_heads, rows = heads, q_len
    m_blocks = -(-rows // ROW_BLOCK)
    n_blocks = max(1, -(-math.ceil(keys) // fa_key_block(head_dim)))
    unsplit = batch * launch_heads * m_blocks
    splits = fa_num_splits(unsplit, BLOCKS_PER_SM * sm_count, n_blocks)
    return DecodeLaunch(launch_heads, m_blocks, n_blocks, splits, unsplit * splits)


def attention_blocks(op: Operator, sm_count: int | None, split_kv: bool) -> float:
    """The ``x`` of the calibrated decode-attention efficiency for attention operator ``op``:
    sequences x KV heads (a kernel without split-KV, or a GPU spec without ``sm_count``), else the
    thread blocks of FlashAttention-2's split-KV launch (:func:`fa_decode_launch`)."""
    batch, kv_heads = op.batch or 1, op.kv_heads or 1
    if (
        not split_kv
        or sm_count is None
        or op.kind != OpKind.ATTENTION
        or not op.keys
        or op.heads is None
        or op.head_dim is None
    ):
        return float(batch * kv_heads)
    launch = fa_decode_launch(batch, op.heads, kv_heads, float(op.queries or 1), float(op.keys), op.head_dim, sm_count)
    return float(launch.blocks)
