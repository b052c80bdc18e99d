"""The one table from API argument and result field names to the command line's flags.

Errors below the command line name what a Python caller passes (:mod:`llm_cost.core.errors`);
:func:`as_flags` rewrites the names an :class:`~llm_cost.core.errors.InputError` lists in its
``fields`` as the flags a shell user typed. A name missing from :data:`FLAGS` is its own flag with
``_`` as ``-`` (``kv_dtype`` is ``--kv-dtype``).
"""

from __future__ import annotations

import re

from llm_cost.core.errors import InputError

#: API argument -> flag, where the two differ by more than ``_`` for ``-``.
FLAGS: dict[str, str] = {
    "input_tokens": "--input",
    "output_tokens": "--output",
    "ttft_s": "--ttft",
    "tpot_s": "--tpot",
    "contexts": "--context",
    "batches": "--batch",
    "seqs": "--seq",
    "chunk_tokens": "--chunk",
    "concurrency": "--batch",
    "tokens": "--tokens",
    "micro_batch": "--micro-batch",
    "reserve_bytes": "--reserve-gb",
    "memory_bytes": "--memory-gb",
    "utilization": "--gpu-memory-utilization",
    "modes": "--mode",
    "layout": "--tp/--pp",
    "chunked_prefill": "--chunk off",
    "width": "--size",
    "height": "--size",
    "lengths": "--seq/--context",
    "prompt_tokens": "--prompt",
    "rows": "--row",
    "model": "MODEL",
}


def flag(name: str) -> str:
    """The flag of an API argument name."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def as_flags(error: InputError) -> str:
    """``error``'s message with each name of its ``fields`` written as its flag."""
    message = str(error)
    for name in error.fields:
        message = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", flag(name), message)
    return message
