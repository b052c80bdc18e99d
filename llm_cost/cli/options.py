"""Typed options the commands share, as ``Annotated`` aliases (the huggingface_hub CLI's habit).

Each option parses its text with a :mod:`llm_cost.core.units` parser that names the flag in its
error, and shows its kind in ``--help``: TOKENS (binary suffixes, 8K = 8,192), INTEGER (plain
digits), LIST (comma-separated values, doubling ranges ``1..256`` and ranges in steps ``1..1000:10``), FRACTION (0.6 or 60%),
NUMBER (a positive real), or a choice list. Defaults of estimates come from
:mod:`llm_cost.perf.timemodel`, the one place that defines them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Callable, Optional

import typer

from llm_cost.core.errors import InputError
from llm_cost.core.types import (AttentionMask, Dtype, Logits, MemoryConvention, MLAForm, StorageDtype, WeightBytes,
                                 WeightFlops)
from llm_cost.core.units import (parse_context, parse_count, parse_decimal, parse_fraction, parse_grid,
                                 parse_integer, parse_positive_float)



def tokens(flag: str, minimum: int = 1) -> Callable[[str], int]:
    """A token count (8K = 8,192) for ``flag``."""
    return lambda text: parse_context(text, flag, minimum)


def integer(flag: str, minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """A plain whole number for ``flag`` (at most ``maximum``, default 10^15)."""
    if maximum is None:
        return lambda text: parse_integer(text, flag, minimum)
    return lambda text: parse_integer(text, flag, minimum, maximum)


def large_count(flag: str) -> Callable[[str], int]:
    """A large count with decimal suffixes (15T = 15 x 10^12) for ``flag``."""
    return lambda text: parse_count(text, flag)


def token_grid(flag: str, minimum: int = 1) -> Callable[[str], list[int]]:
    """A list of token counts with doubling ranges (1K..128K)."""
    return lambda text: parse_grid(text, flag, lambda t, w: parse_context(t, w, minimum))


def integer_grid(flag: str) -> Callable[[str], list[int]]:
    """A list of whole numbers with doubling ranges (1,2,4..256)."""
    return lambda text: parse_grid(text, flag, parse_integer)


def fraction(flag: str, allow_zero: bool = False) -> Callable[[str], float]:
    """An efficiency or probability in (0, 1] (``[0, 1]`` with ``allow_zero``); 60% = 0.6."""
    return lambda text: parse_fraction(text, flag, allow_zero)


def efficiency(flag: str) -> Callable[[str], float]:
    """A utilisation (MFU, MBU) in [1%, 100%]: below 1% is a typing mistake, not a GPU."""
    def parse(text: str) -> float:
        value = parse_fraction(text, flag)
        if value < 0.01:
            raise InputError(f"{flag}: {text!r} is below 1%; give a utilisation such as 0.6 or 60%")
        return value
    return parse


def positive(flag: str, maximum: float | None = None) -> Callable[[str], float]:
    """A finite number greater than 0."""
    return lambda text: parse_positive_float(text, flag, maximum)


def non_negative(flag: str, percent: bool = False, maximum: float = 1e300) -> Callable[[str], float]:
    """A finite number >= 0 and at most ``maximum`` (``percent``: 10% = 0.1)."""
    def parse(text: str) -> float:
        value = parse_decimal(text, flag, percent)
        if value > Decimal(repr(maximum)):
            raise InputError(f"{flag}: {text!r} is larger than {maximum:g}")
        return float(value)
    return parse


def gigabytes(flag: str) -> Callable[[str], int]:
    """A non-negative size in GB (10^9 B) as exact bytes, at most 10^6 GB."""
    def parse(text: str) -> int:
        value = parse_decimal(text, flag)
        if value > 10**6:
            raise InputError(f"{flag}: {text!r} must be at most 1,000,000 GB")
        return int(value * 10**9)
    return parse


def option(*decls: str, parse: Callable[[str], Any], metavar: str, help: str) -> Any:  # noqa: A002
    """A typed option: ``parse`` turns its text into the value; ``metavar`` shows the kind."""
    return typer.Option(*decls, parser=parse, metavar=metavar, help=help)


MODEL_HELP = ("Shipped model name or alias (see `llm-cost list models`), a path to a YAML spec, or a Hugging Face "
              "config.json (or the folder holding it).")
GPU_HELP = "Shipped GPU name or alias (see `llm-cost list gpus`), or a path to a YAML spec."

Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON (stable keys) instead of tables.")]
Plot = Annotated[Optional[str], typer.Option("--plot", metavar="FILE",
                                             help="Also draw the result to FILE.png or FILE.svg (needs "
                                                  "pip install 'llm-cost\\[plot]').")]
Csv = Annotated[bool, typer.Option("--csv", help="Print the rows as CSV, one per grid point or table row (header "
                                                 "line first; columns as the JSON keys, units in their names).")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v",
                                       help="For a config.json MODEL: list the family defaults applied (on stderr).")]
Gpu = Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)]
OptionalGpu = Annotated[Optional[str], typer.Option("--gpu", "-g", help=GPU_HELP)]

Tp = Annotated[Optional[int], option("--tp", parse=integer("--tp"), metavar="INTEGER",
                                     help="Tensor-parallel GPUs (divide the query heads).")]
Pp = Annotated[Optional[int], option("--pp", parse=integer("--pp"), metavar="INTEGER",
                                     help="Pipeline stages (at most the layer count).")]
Ep = Annotated[Optional[int], option("--ep", parse=integer("--ep"), metavar="INTEGER",
                                     help="Expert-parallel ranks: 1 or TP x DP (experts spread whole).")]
Dp = Annotated[Optional[int], option("--dp", parse=integer("--dp"), metavar="INTEGER", help="Data-parallel replicas.")]

BatchGrid = Annotated[Any, option("--batch", "-b", parse=integer_grid("--batch"), metavar="LIST",
                                  help="Sequences per step: one value, a list 1,8,64, a doubling range 1..256 or a range "
                                       "in steps 1..1000:10.")]
ContextGrid = Annotated[Any, option("--context", "-c", parse=token_grid("--context", 0), metavar="LIST",
                                    help="Tokens already cached per sequence (8K = 8,192): one value, a list "
                                         "2K,8K, a doubling range 1K..128K or a range in steps 1K..8K:1K.")]
SeqGrid = Annotated[Any, option("--seq", "-s", parse=token_grid("--seq"), metavar="LIST",
                                help="Prompt lengths in tokens (8K = 8,192): a value, a list or a range 1K..32K.")]

WeightsDtype = Annotated[Optional[StorageDtype], typer.Option("--weights-dtype", case_sensitive=False,
                                                       help="Weight storage dtype (default: the checkpoint's).")]
KvDtype = Annotated[StorageDtype, typer.Option("--kv-dtype", case_sensitive=False, help="KV-cache element dtype.")]
ComputeDtype = Annotated[Optional[Dtype], typer.Option("--dtype", case_sensitive=False,
                                                       help="Compute dtype for the peak FLOP/s (default: fp8 for an "
                                                            "FP8 checkpoint on a GPU with FP8, else bf16).")]
BitsPerWeight = Annotated[Optional[float], option("--bits-per-weight", parse=positive("--bits-per-weight", 64),
                                                  metavar="NUMBER",
                                                  help="Bits per stored weight incl. scales (4.25 for int4, group "
                                                       "128); instead of --weights-dtype.")]
Mfu = Annotated[Optional[float], option("--mfu", parse=efficiency("--mfu"), metavar="FRACTION",
                                        help="Model FLOP utilisation of estimates, 0-1 or 60% (default 60%).")]
Mbu = Annotated[Optional[float], option("--mbu", parse=efficiency("--mbu"), metavar="FRACTION",
                                        help="Memory bandwidth utilisation of estimates, 0-1 or 80% (default 80%).")]
NetworkGbS = Annotated[Optional[float], option("--network-gb-s", parse=positive("--network-gb-s"), metavar="NUMBER",
                                               help="Network bandwidth between nodes per GPU, GB/s per direction "
                                                    "(default 50).")]
LogitsOpt = Annotated[Logits, typer.Option("--logits", case_sensitive=False,
                                           help="LM head on the last position (serving) or on all (training, the "
                                                "documents' count).")]
AttentionOpt = Annotated[AttentionMask, typer.Option("--attention", case_sensitive=False,
                                                     help="causal (each token sees those before it) or full (S x S).")]
WeightBytesOpt = Annotated[WeightBytes, typer.Option("--weight-bytes", case_sensitive=False,
                                                     help="read (weights used + one embedding row per sequence) or "
                                                          "resident (every stored weight once, as the documents).")]
MlaOpt = Annotated[MLAForm, typer.Option("--mla", case_sensitive=False,
                                         help="MLA attention form: plain or absorbed (DeepSeek decode).")]
WeightFlopsOpt = Annotated[WeightFlops, typer.Option("--weight-flops", case_sensitive=False,
                                                     help="Weight FLOPs per token: gemm (2 N_gemm), non_embedding "
                                                          "(2 (N - embedding), as the documents) or total (2 N).")]
ReserveGb = Annotated[Optional[int], option("--reserve-gb", parse=gigabytes("--reserve-gb"), metavar="GB",
                                            help="Runtime reserve per GPU (CUDA context, NCCL, CUDA graphs), GB "
                                                 "(10^9 B); default 2 GiB (0 under --memory datasheet).")]
MemoryOpt = Annotated[MemoryConvention, typer.Option("--memory", case_sensitive=False,
                                                     help="physical: the GPU's capacity in GiB as a deployment "
                                                          "gets it (an '80 GB' H100 holds 80 GiB), less what the "
                                                          "engine keeps; datasheet: the source documents' "
                                                          "convention, the datasheet's GB as 10^9 B, all of it.")]
GpuMemoryUtilization = Annotated[Optional[float], option("--gpu-memory-utilization", parse=fraction(
    "--gpu-memory-utilization"), metavar="FRACTION", help="Share of each GPU's memory the engine may use (vLLM's "
                                                          "gpu_memory_utilization); default 0.9 (1 under --memory "
                                                          "datasheet).")]
ProfileOpt = Annotated[Optional[str], typer.Option("--profile", help="Calibration profile of the prediction: a "
                                                                   "shipped name (one per GPU) or a profile YAML "
                                                                   "file (default: the GPU's shipped profile).")]
GroupSize = Annotated[Optional[int], option("--group-size", parse=integer("--group-size"), metavar="INTEGER",
                                           help="Weights per quantisation group of --weights-dtype int4/int8, each "
                                                "group with a bf16 scale and zero (default: 128 for int4, per "
                                                "channel for int8).")]


#: The most points a sweep (--batch x --context) takes in one command.
MAX_GRID_POINTS = 10_000


def memory_policy(convention: MemoryConvention, utilization: Optional[float], reserve_bytes: Optional[int]):
    """The memory accounting of --memory, --gpu-memory-utilization and --reserve-gb: an engine's
    (vLLM's defaults) or, under --memory datasheet, the source documents' unless a flag says otherwise."""
    from fractions import Fraction

    from llm_cost.analyses.capacity import DEPLOYMENT, DOCUMENTS

    base = DOCUMENTS if convention == MemoryConvention.DATASHEET else DEPLOYMENT
    from dataclasses import replace

    return replace(base, utilization=Fraction(utilization).limit_denominator(10**6) if utilization is not None
                   else base.utilization, reserve_bytes=base.reserve_bytes if reserve_bytes is None else reserve_bytes)
