"""Which decoder layers have which token mixer and feed-forward: the one place layers are counted,
over the whole model or over a run of layers (one pipeline stage's).

Each layer has a mixer (:class:`~llm_cost.core.types.LayerType`: full, sliding or chunked softmax
attention, linear attention, Mamba-2, none) and a feed-forward (:class:`~llm_cost.core.types.MlpType`:
dense, MoE, none), as :meth:`ModelSpec.layer_type` and :meth:`ModelSpec.mlp_kind` say. A tensor of
the blocks lives in the layers of its :class:`~llm_cost.core.types.LayerKind`
(:meth:`LayerKind.holds`).
"""

from __future__ import annotations

from llm_cost.core.records import record
from llm_cost.core.types import LayerKind, LayerType, MlpType
from llm_cost.specs.schema import ModelSpec

__all__ = ["LayerCounts", "layer_counts"]


@record
class LayerCounts:
    """How many layers of a run have each (mixer, feed-forward) pair."""

    pairs: dict[tuple[LayerType, MlpType], int]

    @property
    def total(self) -> int:
        """Layers in the run."""
        return sum(self.pairs.values())

    def mixer(self, layer_type: LayerType) -> int:
        """Layers whose token mixer is ``layer_type``."""
        return sum(n for (t, _), n in self.pairs.items() if t == layer_type)

    def mlp(self, mlp_type: MlpType) -> int:
        """Layers whose feed-forward is ``mlp_type``."""
        return sum(n for (_, m), n in self.pairs.items() if m == mlp_type)

    def of(self, kind: LayerKind) -> int:
        """Layers that hold tensors of ``kind`` (softmax attention: full, sliding and chunked)."""
        return sum(n for (t, m), n in self.pairs.items() if kind.holds(t, m))

    @property
    def mixers(self) -> dict[LayerType, int]:
        """Layers of each mixer present, in the order of :class:`LayerType`."""
        return {t: n for t in LayerType if (n := self.mixer(t))}

    @property
    def mlps(self) -> dict[MlpType, int]:
        """Layers of each feed-forward present, in the order of :class:`MlpType`."""
        return {m: n for m in MlpType if (n := self.mlp(m))}


def layer_counts(spec: ModelSpec, layers: range | None = None) -> LayerCounts:
    """The counts of ``layers`` (default: every decoder layer) by mixer and feed-forward."""
    pairs: dict[tuple[LayerType, MlpType], int] = {}
    for i in range(spec.num_hidden_layers) if layers is None else layers:
        key = (spec.layer_type(i), spec.mlp_kind(i))
        pairs[key] = pairs.get(key, 0) + 1
    return LayerCounts(pairs)
