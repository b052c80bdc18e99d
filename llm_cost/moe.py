"""Mixture-of-experts traffic (seed 003 §06).

With E routed experts, top-k routing and B tokens routed independently and uniformly, the
expected number of distinct experts a MoE layer touches is E(1 - (1 - k/E)^B): k at B = 1,
approaching E as B grows. (Uniform routing is the document's assumption; real routers are
load-balanced towards it.)
"""

from __future__ import annotations

__all__ = ["expected_experts"]


def expected_experts(num_experts: int, top_k: int, tokens: int) -> float:
    """E(1 - (1 - k/E)^B): expected distinct experts hit by ``tokens`` tokens, each choosing
    ``top_k`` of ``num_experts`` uniformly. Exactly k for one token; at most min(kB, E)."""
    if tokens == 1:
        return float(top_k)
    return num_experts * (1 - (1 - top_k / num_experts) ** tokens)
