"""The one table from API argument and result field names to the command line's flags.

Errors below the command line name what a Python caller passes (:mod:`llm_cost.core.errors`);
:func:`as_flags` rewrites the names an :class:`~llm_cost.core.errors.InputError` lists in its
``fields`` as the flags a shell user typed. A name missing from :data:`FLAGS` is its own flag with
``_`` as ``-`` (``kv_dtype`` is ``--kv-dtype``); a name that is a flag already (``--chunk``, as the
command line's own parsers name their values) stays as it is. Quoted text (a value shown with
``repr``: a path, a name) is never rewritten, nor is a part of an unquoted path or dotted key (a
name after ``/``, ``.`` or ``~``, or before ``/`` or ``.`` and a letter: ``/tmp/p/trace.jsonl:6``,
``prefix.tokens``), and one flag named twice in a row (``width and height``, both ``--size``)
is written once.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from llm_cost.core.errors import InputError

#: API argument -> flag, where the two differ by more than ``_`` for ``-``.
FLAGS: dict[str, str] = {
    "input_tokens": "--input",
    "output_tokens": "--output",
    "ttft_s": "--ttft",
    "tpot_s": "--tpot",
    "itl_s": "--itl",
    "e2e_s": "--e2e",
    "prefix_tokens": "--prefix",
    "prefix": "--prefix",
    "max_num_batched_tokens": "--chunk",
    "prefix_caching": "--no-prefix-caching",
    "arrivals": "--workload",
    "stages": "--workload",
    "process": "--workload",
    "cv": "--workload",
    "users": "--workload",
    "kv_capacity_tokens": "--gpu-memory-utilization",
    "kv_blocks": "--gpu-memory-utilization",
    "state_blocks": "--gpu-memory-utilization",
    "sequence_state_blocks": "--gpu-memory-utilization",
    "replicas": "--gpus",
    "block_tokens": "--engine",
    "long_prefill_token_threshold": "--chunk",
    "contexts": "--context",
    "batches": "--batch",
    "seqs": "--seq",
    "chunk_tokens": "--chunk",
    "chunks": "--chunk",
    "concurrency": "--batch",
    "tokens": "--tokens",
    "micro_batch": "--micro-batch",
    "reserve_bytes": "--reserve-gb",
    "utilization": "--gpu-memory-utilization",
    "modes": "--mode",
    "layouts": "--tp/--pp",
    "layout": "--tp/--pp",
    "decode_split_kv": "--split-kv",
    "mla_form": "--mla",
    "weight_convention": "--weight-flops",
    "dims": "--head-dim",
    "width": "--size",
    "height": "--size",
    "chunked_prefill": "--chunk off",
    "lengths": "--seq/--context",
    "prompt_tokens": "--prompt",
    "rows": "--row",
    "model": "MODEL",
    "checkpoint": "MODEL",
    "measurements": "MEASUREMENTS",
}

#: A value quoted as ``repr`` shows it: a quote after a non-word character, up to its match.
_QUOTED = r"""(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)"[^"\n]*"(?!\w)"""
#: One flag twice, joined by "and", "x", "or", "," or "/": written once.
_REPEATED = re.compile(r"(--[\w-]+)(?:(?: and | x | or |, |/)\1(?![\w-]))+")


#: Flags whose values a trace or a workload file holds instead: an error about them names the file's
#: flag when the user gave the file and not the flag (an attacker's trace of 100,000-token rows was
#: refused as "--input: prompts of 150,000 ...", a flag it never gave).
HELD_BY_FILE = ("--input", "--output", "--requests")
FILE_FLAGS = ("--trace", "--workload")


def flag(name: str, given: frozenset[str] = frozenset()) -> str:
    """The flag of an API argument name (a flag stays as it is); ``given``: the flags the user
    typed, where a trace's or a workload's file stands for the lengths and counts it holds."""
    named = name if name.startswith("-") else FLAGS.get(name, "--" + name.replace("_", "-"))
    if named in HELD_BY_FILE and named not in given:
        return next((f for f in FILE_FLAGS if f in given), named)
    return named


def as_flags(error: InputError, given: frozenset[str] = frozenset()) -> str:
    """``error``'s message with each name of its ``fields`` written as its flag (:func:`flag` of
    the flags ``given``), outside quotes."""
    message = str(error)
    if not error.fields:
        return message
    names = "|".join(re.escape(name) for name in sorted(set(error.fields), key=len, reverse=True))
    pattern = re.compile(rf"({_QUOTED})|(?<![\w./~-])({names})(?![\w-]|\.\w|/)")
    message = pattern.sub(lambda m: m.group(1) or flag(m.group(2), given), message)
    return _REPEATED.sub(r"\1", message)


def errors_as_flags(result: Any) -> Any:
    """A comparison (``llm_cost.api.compare_request``'s result) with each GPU's reason for having
    no plan written with flags (:func:`as_flags`), as an error of the command line is."""
    plans = tuple(
        replace(g, error=as_flags(InputError(g.error, fields=g.error_fields))) if g.error else g for g in result.plans
    )
    return replace(result, plans=plans)
