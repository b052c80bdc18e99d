"""Which decoder layers have which token mixer and feed-forward: the one place layers are counted,
over the whole model or over a run of layers (one pipeline stage's).

Each layer has a mixer (:class:`~llm_cost.core.types.LayerType`: full, sliding or chunked softmax
attention, linear attention, Mamba-2, none) and a feed-forward (:class:`~llm_cost.core.types.MlpType`:
dense, MoE, none), as :meth:`ModelSpec.layer_type` and :meth:`ModelSpec.mlp_kind` say. A tensor of
the blocks lives in the layers of its :class:`~llm_cost.core.types.LayerKind`
(:meth:`LayerKind.holds`).
"""

from __future__ import annotations

from functools import lru_cache

from llm_cost.core.records import record
from llm_cost.core.types import LayerKind, LayerType, MlpType
from llm_cost.specs.schema import ModelSpec

__all__ = ["LayerCounts", "layer_counts"]


@record
class LayerCounts:
    """How many layers of a run have each (mixer, feed-forward) pair."""

    pairs: dict[tuple[LayerType, MlpType], int]
    indexed: int = 0  # layers holding a sparse-attention indexer (LayerKind.INDEXED)

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
        if kind is LayerKind.INDEXED:
            return self.indexed
        return sum(n for (t, m), n in self.pairs.items() if kind.holds(t, m))

    @property
    def mixers(self) -> dict[LayerType, int]:
        """Layers of each mixer present, in the order of :class:`LayerType`."""
        return {t: n for t in LayerType if (n := self.mixer(t))}

    @property
    def mlps(self) -> dict[MlpType, int]:
        """Layers of each feed-forward present, in the order of :class:`MlpType`."""
        return {m: n for m in MlpType if (n := self.mlp(m))}


@lru_cache(maxsize=64)
def _running(spec: ModelSpec) -> dict[tuple[LayerType, MlpType], list[int]]:
    """For each (mixer, feed-forward) pair of ``spec``, how many of its first i layers have it
    (i = 0 .. L): a run's counts are two look-ups, not a walk over its layers (a planner asks
    for thousands of runs of a 10,000-layer spec)."""
    kinds = [(spec.layer_type(i), spec.mlp_kind(i)) for i in range(spec.num_hidden_layers)]
    out = {}
    for key in dict.fromkeys(kinds):
        running = [0]
        for kind in kinds:
            running.append(running[-1] + (kind == key))
        out[key] = running
    return out


@lru_cache(maxsize=64)
def _running_indexed(spec: ModelSpec) -> list[int]:
    """How many of the first i layers hold a sparse-attention indexer (i = 0 .. L): the softmax
    layers (MiniMax-M3's ``moe_layers_only``: the MoE layers) outside ``shared_layers``."""
    idx = getattr(spec.attention, "indexer", None)
    running = [0]
    shared = set(idx.shared_layers) if idx is not None else set()
    for i in range(spec.num_hidden_layers):
        if idx is None or i in shared:
            holds = False
        elif idx.moe_layers_only:
            holds = spec.mlp_kind(i) == MlpType.MOE
        else:
            holds = LayerKind.SOFTMAX_ATTENTION.holds(spec.layer_type(i), spec.mlp_kind(i))
        running.append(running[-1] + holds)
    return running


def layer_counts(spec: ModelSpec, layers: range | None = None) -> LayerCounts:
    """The counts of ``layers`` (default: every decoder layer, or a run of them with step 1) by
    mixer and feed-forward, pairs in the order they first appear in the model."""
    span = range(spec.num_hidden_layers) if layers is None else layers
    if span.step != 1 or not 0 <= span.start <= span.stop <= spec.num_hidden_layers:
        raise ValueError(f"layers {span} is not a run of the {spec.num_hidden_layers} layers")
    counts = {key: r[span.stop] - r[span.start] for key, r in _running(spec).items()}
    indexed = _running_indexed(spec)
    return LayerCounts({key: n for key, n in counts.items() if n}, indexed[span.stop] - indexed[span.start])
