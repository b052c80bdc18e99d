"""The API's questions about positions and number formats: RoPE wavelengths and context
extension, and the numerics of each format (``llm-cost rope``, ``numerics``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from llm_cost.api import checks
from llm_cost.api.model import ModelLike, load_model
from llm_cost.core.errors import InputError

if TYPE_CHECKING:
    from llm_cost.analyses.numerics import NumericsResult
    from llm_cost.analyses.rope import RopeResult

__all__ = ["rope", "numerics"]

#: How much longer the extended context is than the training context when neither a model nor a
#: target says.
DEFAULT_EXTENSION = 4


def rope(
    model: Optional[ModelLike] = None,
    *,
    base: Optional[float] = None,
    head_dim: Optional[int] = None,
    train_length: Optional[int] = None,
    target_length: Optional[int] = None,
) -> RopeResult:
    """RoPE wavelengths per rotated pair and how PI, NTK-aware, YaRN, dynamic NTK and Llama 3.1
    scaling stretch them (``llm-cost rope``): of ``model`` (``base`` and ``head_dim`` override
    its rope_theta and rotated dims), or of ``base`` and ``head_dim`` alone. Lengths default to
    the model's (original_)max_position_embeddings, else 8K and 4x that."""
    from llm_cost.analyses.rope import DEFAULT_TRAIN_LENGTH, rope_analysis, rope_for_model

    base = checks.optional(base, checks.number, "base", maximum=1e12)
    head_dim = checks.optional(head_dim, checks.count, "head_dim", 1, 2**20)
    train_length = checks.optional(train_length, checks.count, "train_length")
    target_length = checks.optional(target_length, checks.count, "target_length")
    if model is not None:
        return rope_for_model(load_model(model), train_length, target_length, base=base, dims=head_dim)
    if base is None or head_dim is None:
        raise InputError(
            "give a model, or both base and head_dim (e.g. base=10000, head_dim=128)", fields=("base", "head_dim")
        )
    train = DEFAULT_TRAIN_LENGTH if train_length is None else train_length
    return rope_analysis(base, head_dim, train, DEFAULT_EXTENSION * train if target_length is None else target_length)


def numerics(k: int = 4096, head_dim: int = 128) -> NumericsResult:
    """Range, precision and overflow of FP32, TF32, BF16, FP16, FP8, FP4, INT8 and INT4; the
    accumulation noise of a length-``k`` dot product, u x sqrt(k); the QK-norm logit bound
    sqrt(``head_dim``) (seed 003 §10; ``llm-cost numerics``)."""
    from llm_cost.analyses.numerics import numerics as compute

    return compute(checks.count(k, "k", 1, 2**40), checks.count(head_dim, "head_dim", 1, 2**20))
