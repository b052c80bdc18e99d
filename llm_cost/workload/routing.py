"""Which routed experts a step touches (seed 003 §06).

With E routed experts, top-k routing and T tokens routed independently and uniformly (the
document's assumption; load-balanced routers approach it), each expert is hit with probability
1 - (1 - k/E)^T, so a MoE layer touches on average E(1 - (1 - k/E)^T) distinct experts: k at
T = 1, nearly all E at moderate T. These are expectations (floats), labelled as such.
"""

from __future__ import annotations

import math

__all__ = ["expert_hit_fraction", "expected_experts", "hottest_rank_factor"]


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


def hottest_rank_factor(copies: float, ranks: int) -> float:
    """Expected rows of the most loaded of ``ranks`` expert-parallel ranks over the mean, when
    ``copies`` routed token copies (tokens x k, every data-parallel rank's) land on the ranks
    independently and uniformly (each rank holding an equal share of the experts): the mean is
    mu = copies / R, the spread sigma = sqrt(copies (1/R)(1 - 1/R)) (a binomial), and the largest
    of R such loads is at most mu + sigma sqrt(2 ln R) in expectation (the maximal inequality of
    sub-Gaussian variables: Boucheron, Lugosi and Massart, Concentration Inequalities, 2013, §2.5),
    which this takes as the expectation; capped at R (one rank holding every copy). 1 for one rank.

    A layer waits for its slowest rank, so this multiplies the routed experts' rows of a step under
    EP. It is the statistical imbalance of uniform routing only: a router's persistent preference
    for some experts adds to it, and EPLB's redundant experts (which rebalance the load recorded
    over a window of steps) can remove that persistent part, not this per-step one."""
    if ranks <= 1 or copies <= 0:
        return 1.0
    mu = copies / ranks
    sigma = math.sqrt(copies * (1 / ranks) * (1 - 1 / ranks))
    return min(float(ranks), 1.0 + sigma * math.sqrt(2 * math.log(ranks)) / mu)
