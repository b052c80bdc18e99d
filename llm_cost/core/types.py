"""The vocabulary of the engine as types: dtypes with their storage bits, tensor kinds, parts,
layer types, shard rules, phases, operator kinds and roles, and what bounds a time (the modelling
choices a command offers as flags are in :mod:`llm_cost.core.choices`).

Each is a ``str`` enum, so a value compares equal to its name as typed in YAML or on the command
line (``Dtype.BF16 == "bf16"``) and serialises to that string in JSON. ``DTYPE_BITS`` is the one
table of storage bits per element.
"""

from __future__ import annotations

import math
from enum import Enum
from fractions import Fraction

from llm_cost.core.errors import InputError
from llm_cost.core.records import record

__all__ = [
    "TextEnum",
    "ServingEngine",
    "Dtype",
    "DTYPE_BITS",
    "StorageDtype",
    "STORAGE_DTYPES",
    "dtype_of",
    "TensorKind",
    "TensorGroup",
    "Part",
    "LayerType",
    "MlpType",
    "LayerKind",
    "ShardRule",
    "Phase",
    "Engine",
    "SERVING_ENGINES",
    "Topology",
    "OpKind",
    "OpRole",
    "stored_weight_bits",
    "WeightFormat",
    "BLOCK_SCALES",
    "BlockScales",
    "block_scaled_bits",
    "GROUP_OVERHEAD_BITS",
    "DEFAULT_INT4_GROUP",
    "TrainingDtype",
    "TRAINING_DTYPES",
]


class TextEnum(str, Enum):
    """A string enum whose ``str()`` and format are its value on every Python version."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Dtype(TextEnum):
    """Element formats of weights, KV cache and compute (tensor-core peaks are per dtype)."""

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    FP4 = "fp4"

    @property
    def bits(self) -> int:
        """Storage bits per element (TF32 is stored as FP32)."""
        return DTYPE_BITS[self]


class TrainingDtype(TextEnum):
    """Compute dtypes a training run's matmuls use (``train --dtype``; BF16 mixed precision is the
    default; FP8 where the GPU has it, as DeepSeek-V3 trained; FP16 and TF32 on older GPUs). Integer
    formats train nothing."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    TF32 = "tf32"
    FP32 = "fp32"


#: :class:`TrainingDtype` as the :class:`Dtype` members the peaks are read by.
TRAINING_DTYPES: tuple[Dtype, ...] = tuple(Dtype(d.value) for d in TrainingDtype)


#: Storage bits per element of every dtype.
DTYPE_BITS: dict[Dtype, int] = {
    Dtype.FP64: 64,
    Dtype.FP32: 32,
    Dtype.TF32: 32,
    Dtype.BF16: 16,
    Dtype.FP16: 16,
    Dtype.FP8: 8,
    Dtype.INT8: 8,
    Dtype.INT4: 4,
    Dtype.FP4: 4,
}


class StorageDtype(TextEnum):
    """Formats a weight, KV cache or activation is stored in (TF32 and FP64 are compute formats)."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    FP4 = "fp4"

    @property
    def bits(self) -> int:
        """Storage bits per element."""
        return DTYPE_BITS[Dtype(self.value)]


#: Dtypes a weight, KV cache or activation is stored in.
STORAGE_DTYPES = tuple(Dtype(d.value) for d in StorageDtype)


def dtype_of(name: str | Dtype, what: str = "dtype", storage: bool = True) -> Dtype:
    """The Dtype named ``name`` (case-insensitive); InputError naming the argument ``what`` (its
    field) and the valid names."""
    key = str(name).strip().lower()
    valid = STORAGE_DTYPES if storage else tuple(Dtype)
    for d in valid:
        if d.value == key:
            return d
    raise InputError(f"{what}: {str(name)!r} is not one of: {', '.join(d.value for d in valid)}", fields=(what,))


class TensorKind(TextEnum):
    """What a weight tensor does: a matmul operand, a lookup table, a norm scale, a bias, or other."""

    MATMUL = "matmul"
    LOOKUP = "lookup"
    NORM = "norm"
    BIAS = "bias"
    OTHER = "other"


class TensorGroup(TextEnum):
    """The breakdown group of a weight tensor (what ``params`` lists it under)."""

    EMBEDDING = "embedding"
    POSITION_EMBEDDING = "position_embedding"
    ATTENTION = "attention"
    INDEXER = "indexer"  # DeepSeek Sparse Attention's lightning indexer
    LINEAR_ATTENTION = "linear_attention"
    MAMBA = "mamba"
    SHORT_CONV = "short_conv"
    MLP = "mlp"
    ROUTER = "router"
    ROUTED_EXPERTS = "routed_experts"
    SHARED_EXPERTS = "shared_experts"
    MOE_LATENT = "moe_latent"  # a latent MoE's projections into and out of the experts' width
    NORMS = "norms"
    BIASES = "biases"
    FINAL_NORM = "final_norm"
    LM_HEAD = "lm_head"
    MTP = "mtp"
    PER_LAYER_EMBEDDING = "per_layer_embedding"  # Gemma 4's per-layer embeddings (PLE) and their projections
    VISION_PATCH_EMBED = "vision.patch_embed"
    VISION_BLOCKS = "vision.blocks"
    VISION_MERGER = "vision.merger"
    AUDIO_SUBSAMPLE = "audio.subsample"  # an audio encoder's convolutional sub-sampling and input projection
    AUDIO_BLOCKS = "audio.blocks"
    AUDIO_PROJECTION = "audio.projection"  # its output projection and the embedder into the decoder


class Part(TextEnum):
    """Which part of a checkpoint a tensor belongs to."""

    DECODER = "decoder"
    VISION = "vision"
    AUDIO = "audio"  # an audio encoder and its embedder (Gemma 4 E2B / E4B)
    MTP = "mtp"
    MTP_COPY = "mtp_copy"  # the embedding and LM head copies stored with MTP modules


class LayerType(TextEnum):
    """The token mixer of a decoder layer, as a spec's ``layer_types`` names it (Hugging Face's
    ``layer_types`` values where they exist)."""

    FULL_ATTENTION = "full_attention"
    SLIDING_ATTENTION = "sliding_attention"  # sees at most ``attention.sliding_window`` keys
    CHUNKED_ATTENTION = "chunked_attention"  # sees the earlier tokens of its own chunk (Llama 4)
    LINEAR_ATTENTION = "linear_attention"  # Gated DeltaNet: a fixed recurrent state (Qwen3-Next)
    MAMBA2 = "mamba2"  # a Mamba-2 mixer (Nemotron-H)
    SHORT_CONV = "short_conv"  # LFM2's gated short convolution ("conv" in its layer_types): a conv state only
    MLP_ONLY = "mlp_only"  # no token mixer

    @property
    def caches_kv(self) -> bool:
        """True for softmax attention, which keeps K/V per token (full, sliding, chunked)."""
        return self in _SOFTMAX_LAYERS

    @property
    def kind(self) -> LayerKind | None:
        """The layer kind that holds this mixer's tensors (None: no mixer)."""
        if self.caches_kv:
            return LayerKind.SOFTMAX_ATTENTION
        return _MIXER_KINDS.get(self)


class MlpType(TextEnum):
    """The feed-forward of a decoder layer: a dense MLP, a mixture of experts, or none."""

    DENSE = "dense"
    MOE = "moe"
    NONE = "none"  # a mixer-only block (Nemotron-H)


class LayerKind(TextEnum):
    """The kind of decoder layer a per-layer tensor belongs to (how sharding finds its layers)."""

    SOFTMAX_ATTENTION = "softmax_attention"  # every softmax-attention layer: full, sliding or chunked
    # the sliding layers alone, and the other softmax layers (full, chunked): for tensors whose shape
    # differs between them (MiMo-V2-Flash: more K/V heads and the sinks on its sliding layers)
    SLIDING_ATTENTION = "sliding_attention"
    GLOBAL_ATTENTION = "global_attention"
    LINEAR_ATTENTION = "linear_attention"
    MAMBA = "mamba2"
    SHORT_CONV = "short_conv"
    DENSE = "dense"
    MOE = "moe"
    ANY = "any"  # norms and anything every layer has
    # the layers holding a sparse-attention indexer: every softmax layer (MiniMax-M3: every MoE layer) but
    # those that reuse an earlier layer's selection (GLM-5.2); counted by LayerCounts, not by holds()
    INDEXED = "indexed"

    def holds(self, layer_type: LayerType, mlp_type: MlpType) -> bool:
        """True when a layer of this mixer and feed-forward holds tensors of this kind."""
        if self is LayerKind.ANY:
            return True
        if self is LayerKind.DENSE:
            return mlp_type == MlpType.DENSE
        if self is LayerKind.MOE:
            return mlp_type == MlpType.MOE
        if self is LayerKind.SLIDING_ATTENTION:
            return layer_type == LayerType.SLIDING_ATTENTION
        if self is LayerKind.GLOBAL_ATTENTION:
            return layer_type in (LayerType.FULL_ATTENTION, LayerType.CHUNKED_ATTENTION)
        if self is LayerKind.INDEXED:
            raise ValueError("LayerKind.INDEXED depends on the layer's position: ask LayerCounts.of")
        return layer_type.kind is self


_SOFTMAX_LAYERS = frozenset((LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION, LayerType.CHUNKED_ATTENTION))
_MIXER_KINDS = {
    LayerType.LINEAR_ATTENTION: LayerKind.LINEAR_ATTENTION,
    LayerType.MAMBA2: LayerKind.MAMBA,
    LayerType.SHORT_CONV: LayerKind.SHORT_CONV,
}


class ShardRule(TextEnum):
    """How tensor parallelism splits a tensor (Megatron-LM / vLLM parallel layers)."""

    COLUMN = "column"  # split by output features
    ROW = "row"  # split by input features
    ROW_BIAS = "row_bias"  # the bias of a row-parallel layer: replicated
    KV = "kv"  # K/V heads: split while TP <= n_kv, else one head per GPU, replicated
    VOCAB = "vocab"  # embedding and LM head split by vocabulary
    EXPERT = "expert"  # routed experts: whole experts over EP ranks, or split like an MLP
    HEADWISE = "headwise"  # one value per head (sinks, A_log): split with the heads
    REPLICATED = "replicated"

    @property
    def split_by_tp(self) -> bool:
        """True for the rules that divide a tensor by the TP degree."""
        return self in (ShardRule.COLUMN, ShardRule.ROW, ShardRule.VOCAB, ShardRule.HEADWISE)


class Phase(TextEnum):
    """What a step does: a prompt's forward pass, one token per sequence, or both at once."""

    PREFILL = "prefill"
    DECODE = "decode"
    MIXED = "mixed"  # a prefill chunk beside decoding sequences (chunked prefill)


class Engine(TextEnum):
    """The inference engine (family) a step runs under: its kernels, launch overheads and graph
    capture decide how far below the bound a step runs, so a calibration profile is per (GPU, engine).
    Values as users type them. vLLM and SGLang (FlashAttention/FlashInfer kernels, CUDA graphs,
    torch.compile'd glue), TensorRT-LLM (compiled engines), PyTorch eager kernels (in CUDA graphs, as
    the project's H200 rows), torch.compile (gpt-fast) and llama.cpp (GGML CUDA kernels)."""

    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"
    PYTORCH_EAGER = "pytorch-eager"
    TORCH_COMPILE = "torch-compile"
    LLAMACPP = "llamacpp"


class ServingEngine(TextEnum):
    """The engines whose servers are simulated (their schedulers: ``serve --engine``) and launched
    (their commands: ``serve --emit``): vLLM, SGLang and TensorRT-LLM, a subset of :class:`Engine`
    with its values (the names are written once, there); :data:`SERVING_ENGINES` holds them as
    :class:`Engine` members."""

    VLLM = Engine.VLLM.value
    SGLANG = Engine.SGLANG.value
    TRTLLM = Engine.TRTLLM.value


#: The serving engines as :class:`Engine` members, in :class:`ServingEngine`'s order: the engines
#: :func:`llm_cost.simulate.engine.run_engine` schedules (``EngineConfig.engine``).
SERVING_ENGINES: tuple[Engine, ...] = tuple(Engine(e.value) for e in ServingEngine)


class Topology(TextEnum):
    """How a node's GPU links join its GPUs. ``switch``: every GPU reaches any other at its full
    link bandwidth (NVLink through NVSwitch, as in HGX/DGX H100 and B200 boards); ``mesh``: each GPU
    has one direct link to each other GPU of the node, so a collective among k of them uses k - 1 of
    its links (AMD Instinct MI300X/MI325X/MI355X: 7 Infinity Fabric links, one per peer, AMD
    Instinct MI300 platform data sheet)."""

    SWITCH = "switch"
    MESH = "mesh"


class OpKind(TextEnum):
    """The kind of an operator of a step."""

    GEMM = "gemm"
    ATTENTION = "attention"
    RECURRENCE = "recurrence"  # linear-attention state update and read-out
    ELEMENTWISE = "elementwise"  # norms, biases and other per-element work
    EMBEDDING = "embedding"  # table lookups (and, by the resident convention, untouched weights)
    COLLECTIVE = "collective"


class OpRole(TextEnum):
    """Which operator of a step an operator is: what code asks for (its name is for display; a
    GEMM's weight matrix is named by its tensor group)."""

    MATMUL = "matmul"  # a weight matrix of the blocks, not a routed expert
    ROUTED_EXPERTS = "routed_experts"  # the routed experts' matrices, read at the expected hit fraction
    LM_HEAD = "lm_head"  # multiplies the logits rows
    FULL_ATTENTION = "full_attention"
    SLIDING_ATTENTION = "sliding_attention"
    CHUNKED_ATTENTION = "chunked_attention"
    SPARSE_INDEXER = "sparse_indexer"  # the lightning indexer's scan of every cached key (DeepSeek Sparse Attention)
    LINEAR_ATTENTION = "linear_attention"  # the Gated DeltaNet recurrence
    MAMBA2 = "mamba2"  # the Mamba-2 state update
    SHORT_CONV = "short_conv"  # LFM2's gated short convolution over the last few tokens
    VECTORS = "vectors"  # norm scales, biases and other vectors
    EMBEDDING_ROWS = "embedding_rows"  # one row per new token of each untied table
    RESIDENT_WEIGHTS = "resident_weights"  # by the resident convention, the tables (and vision tower) read whole
    TP_ALL_REDUCE_ATTENTION = "tp_all_reduce_attention"
    TP_ALL_REDUCE_MLP = "tp_all_reduce_mlp"
    EP_ALL_TO_ALL = "ep_all_to_all"
    PP_SEND = "pp_send"
    # the elementwise kernels between the GEMMs (build_step's ``elementwise``: a training step's)
    NORM = "norm"  # RMSNorm/LayerNorm applications: read and write the hidden state
    RESIDUAL_ADD = "residual_add"  # the two residual additions of a block
    ROPE = "rope"  # rotary embedding of the queries and keys
    MLP_ACTIVATION = "mlp_activation"  # SwiGLU/GELU between the up and down projections (dense, shared, routed)
    ROUTER_TOPK = "router_topk"  # the router's softmax/sigmoid and top-k over the E expert scores
    MOE_PERMUTE = "moe_permute"  # tokens copied into expert order (k copies each) before the experts
    MOE_UNPERMUTE = "moe_unpermute"  # the k expert outputs scattered back and summed with the router weights
    CROSS_ENTROPY = "cross_entropy"  # the loss's softmax over every logit row
    FP8_CAST = "fp8_cast"  # FP8 training: the GEMM inputs quantised from BF16
    ATTENTION_SCORES = "attention_scores"  # unfused attention (before FlashAttention): the s x s scores in memory


#: A weight-only quantisation group's scale and zero, bits (bf16 each).
GROUP_OVERHEAD_BITS = 32
#: Group size of int4 weights when none is given (the common GPTQ/AWQ choice).
DEFAULT_INT4_GROUP = 128


class WeightFormat(TextEnum):
    """Formats a weight matrix is stored in: a storage dtype, or a block-scaled format whose scales
    are part of its bits (:data:`BLOCK_SCALES`)."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"  # one scale per tensor or channel: 8 bits
    INT8 = "int8"
    INT4 = "int4"
    FP4 = "fp4"
    FP8_BLOCK = "fp8_block"  # FP8 E4M3 with an FP32 scale per 128 x 128 block (DeepSeek-V3's weight_block_size)
    MXFP4 = "mxfp4"  # FP4 E2M1 in blocks of 32 along the input, one E8M0 scale each (OCP MX v1.0)
    NVFP4 = "nvfp4"  # FP4 E2M1 in blocks of 16, one FP8 E4M3 scale each, one FP32 scale per tensor

    @property
    def element(self) -> Dtype:
        """The dtype of one element, scales aside (what the tensor cores multiply)."""
        return _FORMAT_ELEMENT.get(self, Dtype(self.value) if self.value in DTYPE_BITS else Dtype.FP4)


_FORMAT_ELEMENT = {WeightFormat.FP8_BLOCK: Dtype.FP8, WeightFormat.MXFP4: Dtype.FP4, WeightFormat.NVFP4: Dtype.FP4}


@record
class BlockScales:
    """One scale of ``scale_bits`` per ``rows`` x ``cols`` block of a [out, in] matrix, and
    ``tensor_scale_bits`` once per tensor."""

    rows: int
    cols: int
    scale_bits: int
    tensor_scale_bits: int = 0


#: The scales of each block-scaled format: MXFP4, OCP Microscaling Formats (MX) v1.0 §5 (k = 32 elements
#: share an 8-bit E8M0 scale: 4 + 8/32 = 4.25 bits); NVFP4, NVIDIA's Blackwell format (16 FP4 values share
#: an FP8 E4M3 scale, and a per-tensor FP32 scale: 4.5 bits and 32 bits a tensor; TensorRT Model
#: Optimizer's weight_scale and weight_scale_2); FP8 block scaling, DeepSeek-V3 (an FP32 weight_scale_inv
#: per 128 x 128 block, quantization_config.weight_block_size).
BLOCK_SCALES: dict[WeightFormat, BlockScales] = {
    WeightFormat.FP8_BLOCK: BlockScales(128, 128, 32),
    WeightFormat.MXFP4: BlockScales(1, 32, 8),
    WeightFormat.NVFP4: BlockScales(1, 16, 8, 32),
}


def block_scaled_bits(fmt: WeightFormat, shape: tuple[int, ...]) -> Fraction:
    """Exact bits per element of one [out, in...] matrix of ``shape`` in the block-scaled ``fmt``: the
    element bits, plus one scale per block (partial blocks at the edges count whole, as checkpoints
    store ceil(out / rows) x ceil(in / cols) scales) and any per-tensor scale, spread over the
    elements. E.g. MXFP4 at in = 2,880: 4 + 90 x 8 / 2,880 = 4.25."""
    scales = BLOCK_SCALES[fmt]
    out, inner = shape[0], math.prod(shape[1:])
    blocks = -(-out // scales.rows) * -(-inner // scales.cols)
    extra = blocks * scales.scale_bits + scales.tensor_scale_bits
    return DTYPE_BITS[fmt.element] + Fraction(extra, out * inner)


def stored_weight_bits(dtype: str, group_size: int | None) -> Fraction:
    """Bits per stored weight of ``dtype``, with a group's bf16 scale and zero spread over its
    ``group_size`` weights for int4/int8 (int4: group 128 by default, 4.25 bits; at 32, 5 bits;
    int8 without a group is per channel, 8 bits). A block-scaled format (:data:`BLOCK_SCALES`) on
    whole blocks: fp8_block 8 + 32 / 16,384, mxfp4 4.25, nvfp4 4.5 (its per-tensor scale, 32 bits a
    tensor, is left out: :func:`block_scaled_bits` counts it on a shape)."""
    if dtype in BLOCK_SCALES:
        s = BLOCK_SCALES[WeightFormat(dtype)]
        return DTYPE_BITS[WeightFormat(dtype).element] + Fraction(s.scale_bits, s.rows * s.cols)
    bits = Fraction(DTYPE_BITS[Dtype(dtype)])
    if dtype == "int4" and group_size is None:
        group_size = DEFAULT_INT4_GROUP
    return bits + (Fraction(GROUP_OVERHEAD_BITS, group_size) if group_size and dtype in ("int8", "int4") else 0)
