"""Options of the commands that model a step (flops, roofline, fit, context, moe, spec, serve,
train): dtypes and bits of weights and compute, prefill prompts and cached contexts, estimate
efficiencies, step conventions, memory accounting and calibration profiles, as ``Annotated``
aliases built with :mod:`llm_cost.cli.options`' parsers.

They live apart from the options every command shares, so a command that models no step
(``params``, ``kv``) does not build them, nor define the choices they offer, on every start.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.options import efficiency, fraction, gigabytes, integer, option, positive, token_grid, within
from llm_cost.core.choices import AttentionMask, Logits, MemoryConvention, MLAForm, WeightBytes, WeightFlops
from llm_cost.core.errors import InputError
from llm_cost.core.limits import NETWORK_GB_S_RANGE
from llm_cost.core.types import Dtype, WeightFormat

ContextGrid = Annotated[
    Any,
    option(
        "--context",
        "-c",
        parse=token_grid("--context", 0),
        metavar="LIST",
        help="Tokens already cached per sequence (8K = 8,192): one value, a list "
        "2K,8K, a doubling range 1K..128K or a range in steps 1K..8K:1K.",
    ),
]
SeqGrid = Annotated[
    Any,
    option(
        "--seq",
        "-s",
        parse=token_grid("--seq"),
        metavar="LIST",
        help="Prompt lengths in tokens (8K = 8,192): a value, a list or a range 1K..32K.",
    ),
]
WeightsDtype = Annotated[
    Optional[WeightFormat],
    typer.Option(
        "--weights-dtype",
        case_sensitive=False,
        help="Weight storage format, scales included (mxfp4, nvfp4, fp8_block; default: the checkpoint's, by group).",
    ),
]
QuantizeEmbeddings = Annotated[
    bool,
    typer.Option(
        "--quantize-embeddings",
        help="With --weights-dtype int4, int8, mxfp4, nvfp4 or fp8_block: store the embedding and LM head in it "
        "too (by default they stay in 16 bits, as AWQ, GPTQ and block-scaled checkpoints keep them; fp8 and fp4 "
        "store every parameter, the documents' convention).",
    ),
]


def _step_dtype(text: str) -> Dtype:
    """A compute dtype an inference step runs in (:data:`~llm_cost.api.choices.STEP_DTYPES`),
    case-insensitive; InputError naming ``--dtype`` and the choices for any other."""
    from llm_cost.api.choices import STEP_DTYPES

    found = next((d for d in STEP_DTYPES if d.value == str(text).strip().lower()), None)
    if found is None:
        raise InputError(f"--dtype: {str(text)[:40]!r} is not one of: {', '.join(d.value for d in STEP_DTYPES)}")
    return found


ComputeDtype = Annotated[
    Optional[Dtype],
    option(
        "--dtype",
        parse=_step_dtype,
        metavar="[bf16|fp16|fp8|int8|int4|fp4|fp32]",
        help="Compute dtype for the peak FLOP/s (default: fp8 for an FP8 checkpoint on a GPU with FP8, else bf16).",
    ),
]
BitsPerWeight = Annotated[
    Optional[float],
    option(
        "--bits-per-weight",
        parse=positive("--bits-per-weight", 64),
        metavar="NUMBER",
        help="Bits per stored weight incl. scales (4.25 for int4, group 128); instead of --weights-dtype.",
    ),
]
Mfu = Annotated[
    Optional[float],
    option(
        "--mfu",
        parse=efficiency("--mfu"),
        metavar="FRACTION",
        help="Model FLOP utilisation of estimates, 0-1 or 60% (default 60%).",
    ),
]
Mbu = Annotated[
    Optional[float],
    option(
        "--mbu",
        parse=efficiency("--mbu"),
        metavar="FRACTION",
        help="Memory bandwidth utilisation of estimates, 0-1 or 80% (default 80%).",
    ),
]
NetworkGbS = Annotated[
    Optional[float],
    option(
        "--network-gb-s",
        parse=within("--network-gb-s", NETWORK_GB_S_RANGE),
        metavar="NUMBER",
        help="Network bandwidth between nodes per GPU, GB/s per direction (default 50).",
    ),
]
LogitsOpt = Annotated[
    Logits,
    typer.Option(
        "--logits",
        case_sensitive=False,
        help="LM head on the last position (serving) or on all (training, the documents' count).",
    ),
]
AttentionOpt = Annotated[
    AttentionMask,
    typer.Option("--attention", case_sensitive=False, help="causal (each token sees those before it) or full (S x S)."),
]
WeightBytesOpt = Annotated[
    WeightBytes,
    typer.Option(
        "--weight-bytes",
        case_sensitive=False,
        help="read (weights used + one embedding row per sequence) or "
        "resident (every stored weight once, as the documents).",
    ),
]
MlaOpt = Annotated[
    MLAForm,
    typer.Option("--mla", case_sensitive=False, help="MLA attention form: plain or absorbed (DeepSeek decode)."),
]
WeightFlopsOpt = Annotated[
    WeightFlops,
    typer.Option(
        "--weight-flops",
        case_sensitive=False,
        help="Weight FLOPs per token: gemm (2 N_gemm), non_embedding "
        "(2 (N - embedding), as the documents) or total (2 N).",
    ),
]
ReserveGb = Annotated[
    Optional[int],
    option(
        "--reserve-gb",
        parse=gigabytes("--reserve-gb"),
        metavar="GB",
        help="Runtime reserve per GPU (CUDA context, NCCL, CUDA graphs), GB "
        "(10^9 B); default 2.147 GB (2 GiB; 0 under --memory datasheet).",
    ),
]
MemoryOpt = Annotated[
    MemoryConvention,
    typer.Option(
        "--memory",
        case_sensitive=False,
        help="physical: the GPU's capacity in GiB as a deployment "
        "gets it (as the card reports it: an '80 GB' H100 has 81,559 MiB), less what the "
        "engine keeps; datasheet: the source documents' "
        "convention, the datasheet's GB as 10^9 B, all of it.",
    ),
]
GpuMemoryUtilization = Annotated[
    Optional[float],
    option(
        "--gpu-memory-utilization",
        parse=fraction("--gpu-memory-utilization"),
        metavar="FRACTION",
        help="Share of each GPU's memory the engine may use (vLLM's "
        "gpu_memory_utilization); default 0.9 (1 under --memory "
        "datasheet).",
    ),
]
ProfileOpt = Annotated[
    Optional[str],
    typer.Option(
        "--profile",
        help="Calibration profile of the prediction: a "
        "shipped name <family>-<engine> (hopper-vllm, ampere-llamacpp, ada-llamacpp, cdna3-vllm, ...) or a "
        "profile YAML file (default: the profile of the GPU and --engine).",
    ),
]
TrainProfileOpt = Annotated[
    Optional[str],
    typer.Option(
        "--profile",
        help="Calibration profile of the training step's operators: a shipped name <family>-<engine> "
        "(hopper-pytorch-eager, ...) or a profile YAML file (default: the GPU family's profile for "
        "PyTorch's eager kernels, as Megatron-Core and FSDP2 run them).",
    ),
]
PredictionEngine = Annotated[
    Optional[str],
    typer.Option(
        "--engine",
        help="Inference engine the prediction is for: vllm, sglang, trtllm, pytorch-eager, torch-compile or "
        "llamacpp (default vllm); picks the (GPU, engine) calibration profile, else a transferred one. "
        "--profile wins over it.",
    ),
]
GroupSize = Annotated[
    Optional[int],
    option(
        "--group-size",
        parse=integer("--group-size"),
        metavar="INTEGER",
        help="Weights per quantisation group of --weights-dtype int4/int8, each "
        "group with a bf16 scale and zero (default: 128 for int4, per "
        "channel for int8).",
    ),
]
