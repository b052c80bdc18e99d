"""What each weight tensor is stored in: one format for every weight (a number of bits), or a
checkpoint's formats by tensor group (:class:`MixedBits`, from ``ModelSpec.quantization``).

Every byte count of weights (:mod:`llm_cost.model.params`, :mod:`llm_cost.model.layout`,
:mod:`llm_cost.workload.step`) multiplies a tensor's elements by :func:`tensor_bits`, so a
checkpoint with BF16 attention and MXFP4 experts weighs each group in its own format: its total,
what one GPU of a layout holds and what a step reads.

Quantized, under a ``Quantization``: the matmul weights of the decoder blocks (attention, MLP,
shared and routed experts, linear-attention and Mamba projections), of the MTP modules' blocks and
of the vision tower, except the groups it keeps. Never quantized (as transformers', vLLM's and
TensorRT-LLM's quantizers leave them): the embedding, the LM head, the router, MTP's ``eh_proj``
and the stored embedding/head copies, the DeepSeek Sparse Attention indexer's ``weights_proj``
(d -> its heads; "weights_proj in the checkpoint is stored in bf16", DeepSeek-V3.2-Exp's reference
inference/model.py, and GLM-5's config lists it, ``self_attn.indexers_proj``, in
``modules_to_not_convert``), and every vector (norms, biases, sinks), all in the kept dtype
(DeepSeek-V3 stores its routers' correction biases in FP32: 30,208 B more than counted).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

from llm_cost.core.errors import InputError
from llm_cost.core.types import BLOCK_SCALES, DTYPE_BITS, Dtype, Part, TensorKind, WeightFormat, block_scaled_bits
from llm_cost.model.structure import Tensor, build
from llm_cost.specs.schema import ModelSpec, Quantization

__all__ = [
    "MixedBits",
    "tensor_bits",
    "is_quantized",
    "format_bits",
    "checkpoint_bits",
    "weight_only_bits",
    "check_group_divides",
    "block_scaled_checkpoint_bits",
    "weight_bits_of",
]

#: Matmul groups no quantizer converts.
_NEVER_QUANTIZED = frozenset(("embedding", "lm_head", "router"))


class MixedBits(Fraction):
    """Bits per weight of a checkpoint whose tensor groups are stored in different formats. As a
    number it is the exact average over the main model's parameters (decoder and vision tower), so a
    total weighs what the checkpoint's tensors do; :func:`tensor_bits` gives each tensor's own.
    Equal only to a MixedBits of the same value and quantization (a cache key tells them apart)."""

    quantization: Quantization
    #: Bits of every quantized tensor, scales included, when the format alone does not say them
    #: (a weight-only int4 of group 128: 4.25; None: :func:`format_bits` on the tensor's shape).
    quantized_bits: Fraction | None

    def __new__(
        cls, average: Fraction, quantization: Quantization, quantized_bits: Fraction | None = None
    ) -> MixedBits:
        self = super().__new__(cls, average.numerator, average.denominator)
        self.quantization = quantization
        self.quantized_bits = quantized_bits
        return self

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MixedBits)
            and self.quantization == other.quantization
            and self.quantized_bits == other.quantized_bits
            and Fraction(self) == Fraction(other)
        )

    def __hash__(self) -> int:  # type: ignore[override]  # numbers.Complex declares __hash__ None
        return hash((Fraction(self), self.quantization, self.quantized_bits))

    def __reduce__(self) -> tuple[Any, ...]:
        return (MixedBits, (Fraction(self), self.quantization, self.quantized_bits))

    def __copy__(self) -> MixedBits:
        return self

    def __deepcopy__(self, memo: Any) -> MixedBits:
        return self

    def __repr__(self) -> str:
        return f"MixedBits({float(self):.4g} on average, {self.quantization!r})"


def is_quantized(q: Quantization, t: Tensor) -> bool:
    """True when ``q`` stores tensor ``t`` in its quantized format (see the module docstring)."""
    if t.kind != TensorKind.MATMUL or t.group in _NEVER_QUANTIZED or ".indexer.weights_proj." in t.name:
        return False
    if t.part in (Part.VISION, Part.AUDIO):  # the encoders: kept with the vision group
        return "vision" not in q.kept
    if t.part in (Part.MTP, Part.MTP_COPY):
        return "mtp" not in q.kept and ".block." in t.name and ".mlp.gate." not in t.name  # not the router
    return t.group not in q.kept


def format_bits(fmt: str, shape: tuple[int, ...], group_size: int | None = None) -> Fraction:
    """Exact bits per element of one [out, in...] matrix of ``shape`` stored in ``fmt`` (a
    WeightFormat name): block scales by :func:`llm_cost.core.types.block_scaled_bits`; int4/int8
    in groups of ``group_size`` input rows (-1: one group) as AutoAWQ's WQLinear_GEMM and GPTQ's
    QuantLinear store them: per group and output channel an FP16 ``scales`` entry and a zero point
    packed at the weight's bits (``qzeros``), ceil(in / group) groups (4 + 20 x 32 / 4,096 at in =
    4,096, group 128: 4.15625; GPTQ's ``g_idx``, 32 bits per input row, is not counted); else a
    plain dtype's bits (fp8 with a scale per tensor or channel: 8)."""
    chosen = WeightFormat(fmt)
    if chosen in BLOCK_SCALES:
        return block_scaled_bits(chosen, shape)
    bits = DTYPE_BITS[chosen.element]
    if group_size is not None and chosen in (WeightFormat.INT4, WeightFormat.INT8):
        inner = math.prod(shape[1:])
        groups = 1 if group_size == -1 else -(-inner // group_size)
        return bits + Fraction((16 + bits) * groups, inner)
    return Fraction(bits)


def tensor_bits(bits: int | Fraction, t: Tensor) -> Fraction:
    """Bits per element of tensor ``t``: ``bits`` itself when it is one number for every weight;
    under :class:`MixedBits`, the quantized format on the tensor's shape or the kept dtype."""
    if not isinstance(bits, MixedBits):
        return Fraction(bits)
    q = bits.quantization
    if is_quantized(q, t):
        return (
            bits.quantized_bits
            if bits.quantized_bits is not None
            else format_bits(q.weights_format, t.shape, q.group_size)
        )
    return Fraction(DTYPE_BITS[Dtype(q.kept_dtype)])


def _averaged(spec: ModelSpec, q: Quantization, quantized_bits: Fraction | None = None) -> MixedBits:
    """The MixedBits of ``q`` on ``spec``: the average over its main-model parameters of each
    tensor's bits."""
    s = build(spec)
    main = [t for t in s.tensors if t.part in (Part.DECODER, Part.VISION, Part.AUDIO) and t.stored]
    each = MixedBits(Fraction(16), q, quantized_bits)
    total_bits = sum((t.total * tensor_bits(each, t) for t in main), Fraction(0))
    return MixedBits(total_bits / s.total_params, q, quantized_bits)


@lru_cache(maxsize=64)
def checkpoint_bits(spec: ModelSpec) -> MixedBits:
    """The MixedBits of ``spec``'s checkpoint (``spec.quantization`` must be set): the average over
    its main-model parameters of each tensor's bits."""
    q = spec.quantization
    assert q is not None
    return _averaged(spec, q)


@lru_cache(maxsize=64)
def block_scaled_checkpoint_bits(spec: ModelSpec, fmt: WeightFormat, kept_dtype: Dtype) -> MixedBits:
    """The MixedBits of ``spec``'s matmul weights in a block-scaled ``fmt`` (mxfp4, nvfp4,
    fp8_block), each tensor's scales counted on its own shape, and the embedding, LM head, router
    and every vector kept in ``kept_dtype``, as checkpoints in these formats store them (DeepSeek-V3's
    FP8 blocks, gpt-oss's MXFP4 experts, ModelOpt's NVFP4 exports: see the module docstring)."""
    return _averaged(
        spec,
        Quantization(method=f"block-scaled {fmt.value}", weights_format=fmt.value, kept_dtype=kept_dtype.value),  # type: ignore[arg-type]
    )


@lru_cache(maxsize=64)
def weight_only_bits(spec: ModelSpec, fmt: WeightFormat, bits: Fraction, kept_dtype: Dtype) -> MixedBits:
    """The MixedBits of ``spec``'s matmul weights quantized to ``fmt`` at ``bits`` per weight (its
    scales included), the embedding, LM head, router and every vector kept in ``kept_dtype``, as
    quantizers leave them (AutoAWQ's and GPTQModel's checkpoints of Llama keep ``embed_tokens`` and
    ``lm_head`` in 16 bits, vLLM's ``fp8`` method skips ``lm_head``: see the module docstring)."""
    return _averaged(
        spec,
        Quantization(method=f"weight-only {fmt.value}", weights_format=fmt.value, kept_dtype=kept_dtype.value),  # type: ignore[arg-type]
        bits,
    )


def quantized_widths(spec: ModelSpec, fmt: WeightFormat, kept_dtype: Dtype) -> frozenset[int]:
    """The input widths (``in_features``) of the language model's linear layers
    :func:`weight_only_bits` quantizes to ``fmt``: a group size must divide each, as AutoAWQ's
    ``WQLinear_GEMM`` (``in_features % group_size == 0``) and GPTQ's packing require. Only 2-D
    decoder weights: a vision or audio encoder's convolutions and patch embeddings (Qwen2-VL's
    1,176-wide patch projection, Gemma's 3 x 14 x 14 patches) are no Linear layer AWQ or GPTQ
    packs (an attacker's Qwen2-VL was told no power-of-two group fits)."""
    q = Quantization(method=f"weight-only {fmt.value}", weights_format=fmt.value, kept_dtype=kept_dtype.value)  # type: ignore[arg-type]
    linear = (t for t in build(spec).tensors if t.part == Part.DECODER and t.stored and len(t.shape) == 2)
    return frozenset(t.shape[1] for t in linear if is_quantized(q, t))


def check_group_divides(spec: ModelSpec, dtype: WeightFormat, group: int, kept: Dtype, default: bool) -> None:
    """InputError naming ``group_size`` for a group (the ``default`` int4 group of 128 too) that does
    not divide the input width of every matrix it quantizes
    (:func:`llm_cost.model.formats.quantized_widths`): no AWQ or GPTQ checkpoint stores a fraction
    of a group (an attacker's group of 3 gave 13,846,096,554.67 bytes)."""
    widths = sorted(quantized_widths(spec, dtype, kept))
    if all(w % group == 0 for w in widths):
        return
    common = math.gcd(*widths)
    fits = [g for g in (32, 64, 128, 256) if common % g == 0] or [common]
    shown_widths = ", ".join(f"{w:,}" for w in widths[:6]) + (" ..." if len(widths) > 6 else "")
    raise InputError(
        f"group_size: {'the default group of ' if default else ''}{group:,} does not divide the input width of every "
        f"matrix {dtype.value} quantizes "
        f"({shown_widths}); give one that does, e.g. {', '.join(f'{g:,}' for g in fits)}",
        fields=("group_size",),
    )


def weight_bits_of(bits: Any, limit: bool = False) -> Fraction:
    """``bits`` as the engine carries it: a MixedBits as it is; any other number as a Fraction,
    exactly, or with ``limit`` the nearest of denominator at most 1,000 (a float typed on the
    command line)."""
    if isinstance(bits, MixedBits) or (type(bits) is Fraction and not limit):
        return bits  # a Fraction as it is (a step builder asks thousands of times)
    return Fraction(bits).limit_denominator(1000) if limit else Fraction(bits)
