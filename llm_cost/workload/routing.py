"""Which routed experts a step touches (seed 003 §06).

With E routed experts, top-k routing and T tokens routed independently and uniformly (the
document's assumption; load-balanced routers approach it), each expert is hit with probability
1 - (1 - k/E)^T, so a MoE layer touches on average E(1 - (1 - k/E)^T) distinct experts: k at
T = 1, nearly all E at moderate T. These are expectations (floats), labelled as such.
"""

from __future__ import annotations

__all__ = ["expert_hit_fraction", "expected_experts"]


def expert_hit_fraction(num_experts: int, top_k: int, tokens: int) -> float:
    """1 - (1 - k/E)^T: the chance that one routed expert receives at least one of ``tokens``
    tokens; exactly k/E for one token."""
    if tokens == 1:
        return top_k / num_experts
    return 1 - (1 - top_k / num_experts) ** tokens


def expected_experts(num_experts: int, top_k: int, tokens: int) -> float:
    """E(1 - (1 - k/E)^B): expected distinct experts hit by ``tokens`` tokens, each choosing
    ``top_k`` of ``num_experts`` uniformly. Exactly k for one token; at most min(kB, E)."""
    if tokens == 1:
        return float(top_k)
    return num_experts * expert_hit_fraction(num_experts, top_k, tokens)
