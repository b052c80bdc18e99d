"""GPU memory as a serving engine sees it: what is left for the KV cache, and how many sequences
it holds (vLLM's accounting; Kwon et al. 2023, "Efficient Memory Management for Large Language
Model Serving with PagedAttention").

Per GPU of the fullest pipeline stage::

    KV budget = capacity x utilisation - weights - activation workspace - runtime reserve

* capacity: the memory the card reports (``memory_gib`` x 2^30: nvidia-smi's memory.total, an
  "80 GB" H100's 81,559 MiB, an H200's 143,771 MiB; each spec cites its report), or the
  datasheet's figure read as 10^9 B under the source documents' convention
  (:class:`~llm_cost.core.types.MemoryConvention`);
* utilisation: the share of memory the engine may use (vLLM's ``gpu_memory_utilization``,
  default 0.9);
* activation workspace: the largest activations of a step of ``step_tokens`` tokens and
  ``step_sequences`` logit rows (by default vLLM's ``max_num_batched_tokens`` and ``max_num_seqs``
  on the GPU), an estimate (see :func:`workspace_bytes`), which vLLM measures with a profiling run;
* runtime reserve: what the engine's PyTorch allocator never gets, default 2 GiB: the CUDA
  context, cuBLAS and NCCL buffers and CUDA graphs (vLLM's logs show 0.1-1.8 GiB of such
  "non-torch" memory) and what the driver keeps (vLLM sees 79.22 GiB of the 79.65 GiB an H100 reports).

The KV cache is paged: every sequence holds whole blocks of ``block_tokens`` tokens (16, vLLM's
default), so a sequence of s tokens takes ceil(s / 16) x 16 tokens of cache on every caching layer
(sliding layers at most their window). The documents' convention is the datasheet capacity, all
of it, no workspace, no reserve, and token-exact sequences (:data:`DOCUMENTS`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction

from llm_cost.core.choices import MemoryConvention
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import LayerType
from llm_cost.core.units import exact
from llm_cost.model.layout import ONE_GPU, Layout, per_gpu, stage_kv_bytes
from llm_cost.specs.schema import GQAAttention, HardwareSpec, ModelSpec

__all__ = [
    "TIGHT_HEADROOM_BYTES",
    "tight_memory_note",
    "MemoryPolicy",
    "DEPLOYMENT",
    "DOCUMENTS",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "DEFAULT_RUNTIME_RESERVE_BYTES",
    "KV_BLOCK_TOKENS",
    "capacity_bytes",
    "workspace_bytes",
    "KvRoom",
    "kv_room",
    "sequence_kv_bytes",
    "max_concurrency",
    "policy_note",
    "paged_tokens",
    "usable_bytes",
    "kv_budget_bytes",
]

#: vLLM's default ``gpu_memory_utilization``: the share of a GPU's memory the engine may use.
DEFAULT_GPU_MEMORY_UTILIZATION = Fraction(9, 10)
#: CUDA context, library workspaces, NCCL buffers, CUDA graphs and the driver's share, bytes (2 GiB).
DEFAULT_RUNTIME_RESERVE_BYTES = 2 * 2**30
#: Tokens per KV block (vLLM's default ``block_size``).
KV_BLOCK_TOKENS = 16
#: Bits of an activation element in the workspace; logits are kept at 32 bits for sampling.
_ACTIVATION_BITS, _LOGIT_BITS = 16, 32


@record
class MemoryPolicy:
    """How much of a GPU's memory the KV cache may take (see the module docstring)."""

    convention: MemoryConvention = MemoryConvention.PHYSICAL
    utilization: Fraction = DEFAULT_GPU_MEMORY_UTILIZATION
    reserve_bytes: int = DEFAULT_RUNTIME_RESERVE_BYTES
    block_tokens: int = KV_BLOCK_TOKENS
    workspace: bool = True

    def __post_init__(self) -> None:
        """InputError for a policy no engine could have: a convention that is not one, a share
        of memory outside (0, 1], a negative reserve, blocks of fewer than one token."""
        if self.convention not in tuple(MemoryConvention):
            raise InputError(f"convention: {self.convention!r} is not one of: physical, datasheet (MemoryConvention)")
        object.__setattr__(self, "convention", MemoryConvention(self.convention))
        if (
            isinstance(self.utilization, bool)
            or not isinstance(self.utilization, (int, Fraction))
            or not 0 < self.utilization <= 1
        ):
            raise InputError(
                f"utilization: {self.utilization!r} must be a Fraction or int in (0, 1], e.g. Fraction(9, 10)"
            )
        for name, value, least in (("reserve_bytes", self.reserve_bytes, 0), ("block_tokens", self.block_tokens, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least or value > 10**15:
                raise InputError(f"{name}: {value!r} must be an integer from {least} to 10^15")


#: A serving engine's accounting (vLLM's defaults): physical memory, 90%, 2 GiB reserve, 16-token blocks.
DEPLOYMENT = MemoryPolicy()
#: The source documents' accounting: the datasheet's GB as 10^9 B, all of it, token-exact sequences.
DOCUMENTS = MemoryPolicy(MemoryConvention.DATASHEET, Fraction(1), 0, 1, False)


def capacity_bytes(gpu: HardwareSpec, convention: MemoryConvention) -> int:
    """The GPU's memory in bytes under ``convention``: physical (memory_gib x 2^30 when the spec
    gives it) or the datasheet's memory_gb x 10^9."""
    return gpu.capacity_bytes if convention == MemoryConvention.PHYSICAL else gpu.memory_bytes


def workspace_bytes(spec: ModelSpec, layout: Layout, step_tokens: int, sequences: int) -> int:
    """Peak activation bytes of a step of ``step_tokens`` tokens and ``sequences`` logit rows on
    one GPU, an estimate: the residual stream, the attention's Q/K/V and the MLP's gate and up
    outputs (d + (n_q + 2 n_kv) d_h / t + 2 d_ff / t per token; for MoE the k routed experts'
    and the shared experts' widths) at 16 bits, and the logits (V / t per row) at 32 bits.
    vLLM measures this with a profiling run; here it is the sum of the largest live tensors."""
    per_token, t = _workspace_per_token(spec, layout.tp), layout.tp
    num, den = per_token.numerator, per_token.denominator
    # the ceiling of (tokens x per_token x 16 + rows x V / t x 32) / 8, exactly, in integers (a plan
    # asks for thousands: Fraction arithmetic was 15 us of each)
    top = step_tokens * num * _ACTIVATION_BITS * t + sequences * spec.vocab_size * _LOGIT_BITS * den
    return -(-top // (8 * den * t))


@functools.lru_cache(maxsize=256)
def _workspace_per_token(spec: ModelSpec, t: int) -> Fraction:
    """The elements of :func:`workspace_bytes` per token at tensor parallelism ``t`` (memoised: a
    plan asks for thousands of steps of one model)."""
    d = spec.hidden_size
    att = spec.attention
    # the widest softmax layer's Q/K/V: a layer type's own K/V heads (MiMo-V2-Flash's sliding layers)
    # and head width (Gemma 4's full layers); GQA value heads may be narrower (v_head_dim)
    d_v = spec.v_head_dim if isinstance(att, GQAAttention) else spec.head_dim
    qkv = max(
        att.num_attention_heads * d_h + n_kv * (d_h + (d_h if d_h != spec.head_dim else d_v))
        for n_kv, d_h in {spec.heads_of(x) for x in LayerType if x.caches_kv}
    )
    widths = [2 * spec.mlp.intermediate_size] if spec.mlp is not None else []
    if spec.moe is not None:
        m = spec.moe
        widths.append(2 * (m.num_experts_per_tok * m.moe_intermediate_size + m.shared_expert_intermediate_size))
    return d + Fraction(qkv + max(widths, default=0), t)


def paged_tokens(tokens: int, block: int) -> int:
    """Tokens of cache a sequence of ``tokens`` tokens holds in whole blocks of ``block``."""
    return -(-tokens // block) * block


def usable_bytes(gpu: HardwareSpec, policy: MemoryPolicy) -> int:
    """The bytes of one GPU the engine may use: capacity x utilisation, floored."""
    return math.floor(capacity_bytes(gpu, policy.convention) * policy.utilization)


def kv_budget_bytes(
    spec: ModelSpec,
    layout: Layout,
    policy: MemoryPolicy,
    usable: int,
    weights: int | Fraction,
    step_tokens: int,
    sequences: int,
) -> Fraction:
    """What is left for the KV cache on a GPU of ``usable`` bytes holding ``weights``: less the
    workspace of a step of ``step_tokens`` tokens and ``sequences`` rows and the reserve. Negative
    when the weights do not fit."""
    work = workspace_bytes(spec, layout, step_tokens, sequences) if policy.workspace else 0
    rest = usable - work - policy.reserve_bytes  # integers; one Fraction operation for the weights
    return Fraction(rest - weights) if isinstance(weights, int) else rest - weights


def sequence_kv_bytes(
    spec: ModelSpec, layout: Layout, contexts: Sequence[int], kv_bits: int, block_tokens: int
) -> Fraction:
    """Mean KV bytes (and fixed state) per sequence on the fullest stage's GPU, over sequences at
    ``contexts`` (one entry per share of the sequences), each in whole blocks."""
    per_stage = [
        sum(
            (Fraction(stage_kv_bytes(spec, layout, paged_tokens(c, block_tokens), kv_bits)[i]) for c in contexts),
            Fraction(0),
        )
        / len(contexts)
        for i in range(layout.pp)
    ]
    return max(per_stage)


def max_concurrency(budget_bytes: int | Fraction, per_sequence_bytes: int | Fraction, model: str = "model") -> int:
    """Whole sequences of ``per_sequence_bytes`` the budget holds (0 when there is no budget).
    InputError naming ``model``'s layer_types when no layer keeps anything per sequence."""
    if budget_bytes <= 0:
        return 0
    if per_sequence_bytes <= 0:
        raise InputError(
            f"{model}: no layer of its layer_types keeps a KV cache or a state per sequence (every layer is "
            "mlp_only), so memory does not bound the sequences it holds: there is no capacity to compute"
        )
    return int(budget_bytes // per_sequence_bytes)


@record
class KvRoom(Result):
    """Memory of the fullest GPU of a layout under a policy, and the sequences its KV budget holds."""

    convention: MemoryConvention
    capacity_bytes: int
    utilization: float
    usable_bytes: int  # capacity x utilisation, floored
    weight_bytes: int | Fraction
    workspace_bytes: int
    reserve_bytes: int
    kv_budget_bytes: int | Fraction  # may be negative: the weights do not fit
    kv_bytes_per_sequence: int | Fraction
    max_concurrency: int
    block_tokens: int

    @property
    def fits(self) -> bool:
        """Whether the weights, workspace and reserve leave room for at least one sequence."""
        return self.max_concurrency > 0


def kv_room(
    spec: ModelSpec,
    gpu: HardwareSpec,
    contexts: Sequence[int],
    *,
    layout: Layout = ONE_GPU,
    policy: MemoryPolicy = DEPLOYMENT,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    step_tokens: int | None = None,
    step_sequences: int | None = None,
) -> KvRoom:
    """The KV budget of the fullest GPU of ``layout`` and how many sequences at ``contexts`` it
    holds (see the module docstring), the workspace sized for a step of ``step_tokens`` tokens and
    ``step_sequences`` logit rows: by default vLLM's server defaults on this GPU
    (:func:`~llm_cost.simulate.engine.vllm_defaults`: ``max_num_batched_tokens`` and
    ``max_num_seqs``), as the simulated ``serve`` sizes its KV pool, so that ``fit`` and ``serve``
    give one budget. InputError for an invalid layout."""
    if step_tokens is None or step_sequences is None:
        from llm_cost.simulate.engine import vllm_defaults

        engine = vllm_defaults(gpu)
        step_tokens = engine.max_num_batched_tokens if step_tokens is None else step_tokens
        step_sequences = engine.max_num_seqs if step_sequences is None else step_sequences
    usable = usable_bytes(gpu, policy)
    weights = per_gpu(spec, layout, weight_bits, kv_bits).max_weight_bytes
    workspace = workspace_bytes(spec, layout, step_tokens, step_sequences) if policy.workspace else 0
    budget = kv_budget_bytes(spec, layout, policy, usable, weights, step_tokens, step_sequences)
    per_seq = sequence_kv_bytes(spec, layout, contexts, kv_bits, policy.block_tokens)
    return KvRoom(
        policy.convention,
        capacity_bytes(gpu, policy.convention),
        float(policy.utilization),
        usable,
        weights,
        workspace,
        policy.reserve_bytes,
        exact(budget),
        exact(per_seq),
        max_concurrency(budget, per_seq, spec.name),
        policy.block_tokens,
    )


#: Memory left on the fullest GPU under which a plan is warned about (2 GiB): a step's activations
#: past the estimate, allocator fragmentation, CUDA graphs or NCCL buffers larger than the reserve
#: would not fit in it.
TIGHT_HEADROOM_BYTES = 2 * 2**30


def tight_memory_note(headroom_bytes: int | float | Fraction, what: str) -> list[Note]:
    """A warning when ``headroom_bytes`` (what is left on the fullest GPU of ``what``, after all it
    holds) is from 0 to :data:`TIGHT_HEADROOM_BYTES`; nothing otherwise (a plan that does not fit
    says so itself)."""
    if not 0 <= headroom_bytes < TIGHT_HEADROOM_BYTES:
        return []
    return [
        note(
            "warning.tight_memory",
            headroom=exact(headroom_bytes) if not isinstance(headroom_bytes, float) else headroom_bytes,
            what=what,
            bound=TIGHT_HEADROOM_BYTES,
        )
    ]


def policy_note(gpu: HardwareSpec, policy: MemoryPolicy) -> Note:
    """The memory accounting a result used, as a convention line."""
    if policy == DOCUMENTS:
        return note("capacity.documents", memory_gb=gpu.memory_gb, memory_bytes=gpu.memory_bytes)
    physical = policy.convention == MemoryConvention.PHYSICAL and gpu.memory_gib is not None
    return note(
        "capacity.policy",
        physical=physical,
        memory_gib=gpu.memory_gib,
        memory_gb=gpu.memory_gb,
        capacity_bytes=capacity_bytes(gpu, policy.convention),
        utilization=float(policy.utilization),
        reserve_bytes=policy.reserve_bytes,
        block_tokens=policy.block_tokens,
        workspace=policy.workspace,
    )
