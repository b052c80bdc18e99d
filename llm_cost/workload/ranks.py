"""One engine step of an attention data-parallel replica, as its ranks run it.

A replica of ``dp`` attention data-parallel ranks (vLLM's ``--data-parallel-size`` with
``--enable-expert-parallel``, SGLang's ``--enable-dp-attention``) runs one scheduler per rank, each
with its own sequences and token budget, and every MoE layer joins the ranks (their tokens meet at
the experts), so they step together. :func:`~llm_cost.workload.step.build_step` times one rank of
such a replica from the replica's sequence groups, each group's sequences split over the ranks
(rounded up). That is exact for the decoding sequences; a prompt, though, runs on one rank only,
and a busy replica's ranks each take their own prompt chunk in a step. :func:`rank_groups` turns a
replica-level mixed step (a planner's or a merged scheduler's: its prompt tokens those of all
ranks) into the groups whose split gives each rank its share of the prompt tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from llm_cost.workload.step import SeqGroup

__all__ = ["rank_groups"]


def rank_groups(groups: Sequence[SeqGroup], dp: int) -> list[SeqGroup]:
    """The groups of a replica-level step of ``dp`` attention-DP ranks that
    :func:`~llm_cost.workload.step.build_step` splits into each rank's share. In a step that also
    decodes (continuous batching: each rank fills its own token budget with its own prompts' chunks
    beside its decoding sequences), a prompt group that is not a whole number of sequences per rank
    has its tokens shared evenly: ceil(count / dp) sequences per rank of an equal part of the
    group's tokens (at least one each), at the group's cached length; so a 16,384-token chunk on 8
    ranks becomes a 2,048-token chunk on each, the prompt tokens the replica computes in the step
    kept. Decoding groups, whole prompts per rank, and the prompts of a step that only prefills (a
    prompt runs on one rank; the others wait for it) are left as they are. Unchanged at ``dp`` 1."""
    if dp <= 1 or not any(g.new_tokens == 1 for g in groups):
        return list(groups)
    out = []
    for g in groups:
        if g.new_tokens == 1 or g.count % dp == 0:
            out.append(g)
            continue
        per_rank = math.ceil(g.count / dp)
        tokens = g.count * g.new_tokens
        out.append(SeqGroup(dp * per_rank, max(1, math.ceil(tokens / (dp * per_rank))), g.cached))
    return out
