"""Each serving engine's admission and preemption rules, as the engine loop asks them.

The loop (:mod:`llm_cost.simulate.engine`) is vLLM V1's scheduler: running requests first, then
waiting requests in arrival order while blocks, ``max_num_seqs`` and the token budget last; a
request short of blocks preempts the newest running one (recomputed when it runs again). A
:class:`Policy` says where an engine departs from it, in three places:

* **admission** (:meth:`Policy.admission`): a gate over the waiting requests besides their blocks
  and the caps (vLLM and TensorRT-LLM: none);
* **reservation** (:attr:`Policy.reserves_whole`): whether a request's blocks for its whole prompt
  and maximum output are held from its admission (then nothing is ever preempted), or taken as
  its tokens are computed;
* **step mixing** (:attr:`Policy.prompts_apart`): whether a step may hold prompt chunks beside
  decoding requests (vLLM's chunked prefill), or prompts run in steps of their own;

and what a preemption resets (:meth:`Policy.preempted`).

* vLLM (:class:`Policy`): the loop as it is (``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``).
* SGLang (:class:`SglangPolicy`; ``python/sglang/srt/managers/schedule_policy.py``, ``PrefillAdder``):
  the free tokens (evictable cached blocks included) less, for every running request,
  ``new_token_ratio`` x its remaining output (at most ``CLIP_MAX_NEW_TOKENS`` = 4,096) and, for
  each request admitted in this pass, its new prompt tokens and whole output, must exceed a
  waiting request's new prompt tokens plus its whole output (``add_one_req``: ``total_tokens >=
  rem_total_tokens`` refuses it), else admission stops. ``new_token_ratio`` starts at 0.7
  (``SGLANG_INIT_NEW_TOKEN_RATIO``), falls by (0.7 - 0.098) / 600 a step to 0.098 (0.14 x 0.7:
  ``SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR``, ``SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS``) and goes back to
  0.7 when a request is retracted (preempted, recomputed as vLLM does; SGLang retracts the
  request with the fewest output tokens, here the newest as vLLM). Scheduling is FCFS
  (``--schedule-policy fcfs``); chunked prefill and the token budget as vLLM's, but a step does not
  mix prompts with decodes (``--enable-mixed-chunk`` is off by default): prefill first, a step of
  prompts alone while any can run, the decoding requests waiting for the next decode step
  (``Scheduler.get_next_batch_to_run``, ``python/sglang/srt/managers/scheduler.py``;
  sgl-project/sglang @ d51c1c21d1ac07cd5d1de9ead6c99087d8428e79). A step short of blocks is
  scheduled as vLLM's.
* TensorRT-LLM (:class:`TrtllmPolicy`): the ``GUARANTEED_NO_EVICT`` capacity policy (the default of
  ``CapacitySchedulerPolicy``; ``tensorrt_llm/_torch/pyexecutor/scheduler.py``,
  ``GuaranteedNoEvictScheduler``): a request is admitted only if the blocks of its whole prompt and
  maximum output can be reserved, so nothing is ever preempted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar

from llm_cost.core.types import SERVING_ENGINES, Engine

__all__ = ["Policy", "SglangPolicy", "TrtllmPolicy", "Admission", "policy_for"]

#: A gate over one admission pass's waiting requests, asked in order: ``admits(new_tokens,
#: output_left, free_tokens, alone)`` whether a request of ``new_tokens`` prompt tokens to compute
#: and ``output_left`` output tokens to go is admitted when ``free_tokens`` tokens of blocks are
#: free (``alone``: nothing runs or was admitted yet in this pass); False stops the pass.
Admission = Callable[[int, int, int, bool], bool]

#: SGLang's admission estimate (module docstring): its initial and least ``new_token_ratio``, the
#: steps over which it falls from one to the other, and the clip of a request's remaining output.
SGLANG_RATIO, SGLANG_MIN_RATIO, SGLANG_DECAY_STEPS, SGLANG_CLIP_TOKENS = 0.7, 0.7 * 0.14, 600, 4096


class Policy:
    """vLLM V1's rules: the loop's own (module docstring). One object per simulated replica (a
    policy may keep state across its steps)."""

    engine: ClassVar[Engine] = Engine.VLLM
    #: Whether admission holds the blocks of a request's prompt and maximum output at once.
    reserves_whole: ClassVar[bool] = False
    #: Whether prompts run in steps of their own, without decoding requests beside them.
    prompts_apart: ClassVar[bool] = False

    def admission(self, steps: int, outputs_left: Callable[[], Iterable[int]]) -> Admission | None:
        """The gate of an admission pass at step ``steps``, given the remaining output tokens of
        each running request (``outputs_left``, asked only by a policy that needs them): None, the
        blocks and the caps alone decide."""
        return None

    def preempted(self, steps: int) -> None:
        """A running request was preempted at step ``steps``: nothing to reset."""


class SglangPolicy(Policy):
    """SGLang's rules (module docstring): admission against its estimate of the running requests'
    future tokens, prompts in steps of their own."""

    engine = Engine.SGLANG
    prompts_apart = True

    def __init__(self) -> None:
        #: The step ``new_token_ratio`` last started from its initial value (a retraction resets it).
        self.ratio_since = 0

    def new_token_ratio(self, steps: int) -> float:
        """``new_token_ratio`` at step ``steps``: 0.7 at the last retraction, falling linearly to
        0.098 over 600 steps."""
        fall = (SGLANG_RATIO - SGLANG_MIN_RATIO) / SGLANG_DECAY_STEPS * (steps - self.ratio_since)
        return max(SGLANG_MIN_RATIO, SGLANG_RATIO - fall)

    def admission(self, steps: int, outputs_left: Callable[[], Iterable[int]]) -> Admission:
        """``PrefillAdder``'s gate: each request's new prompt tokens and clipped output must stay
        under the free tokens less the running requests' estimate and what this pass admitted."""
        reserved = self.new_token_ratio(steps) * sum(min(left, SGLANG_CLIP_TOKENS) for left in outputs_left())

        def admits(new_tokens: int, output_left: int, free_tokens: int, alone: bool) -> bool:
            nonlocal reserved
            total = new_tokens + min(output_left, SGLANG_CLIP_TOKENS)
            if not alone and total >= free_tokens - reserved:
                return False  # SGLang's NO_TOKEN
            reserved += total
            return True

        return admits

    def preempted(self, steps: int) -> None:
        """A retraction sets ``new_token_ratio`` back to its initial value."""
        self.ratio_since = steps


class TrtllmPolicy(Policy):
    """TensorRT-LLM's ``GUARANTEED_NO_EVICT`` (module docstring): each request's blocks reserved
    whole at admission."""

    engine = Engine.TRTLLM
    reserves_whole = True


_POLICIES: dict[Engine, type[Policy]] = {p.engine: p for p in (Policy, SglangPolicy, TrtllmPolicy)}
assert set(_POLICIES) == set(SERVING_ENGINES), "one policy per serving engine"


def policy_for(engine: Engine) -> Policy:
    """A fresh policy of ``engine`` (one of :data:`~llm_cost.core.types.SERVING_ENGINES`) for one
    replica."""
    return _POLICIES[engine]()
