"""The command that runs a serving plan (``llm-cost serve --emit vllm|sglang|trtllm``): one
replica's launch command for vLLM, SGLang or TensorRT-LLM, each flag checked against the engine's
own argument parser at the version named (:data:`ENGINE_SOURCES`).

Flags, by engine (each is a parser entry of the file cited):

* vLLM (``vllm/engine/arg_utils.py``, ``EngineArgs.add_cli_args``): ``vllm serve MODEL
  --tensor-parallel-size --pipeline-parallel-size [--enable-expert-parallel] --max-num-seqs
  --max-num-batched-tokens --enable-chunked-prefill|--no-enable-chunked-prefill
  --gpu-memory-utilization --kv-cache-dtype auto|fp8 [--quantization fp8] --max-model-len
  [--no-enable-prefix-caching]`` (booleans are ``argparse.BooleanOptionalAction``: ``--x`` and
  ``--no-x``).
* SGLang (``python/sglang/srt/server_args.py``, ``ServerArgs``: each field's flag is its name
  with dashes, ``tp_size`` -> ``--tp-size``): ``python -m sglang.launch_server --model-path MODEL
  --tp-size --pp-size [--ep-size] --max-running-requests --chunked-prefill-size (-1: off)
  --mem-fraction-static --kv-cache-dtype auto|fp8_e4m3 [--quantization fp8] --context-length
  [--disable-radix-cache]``.
* TensorRT-LLM (``tensorrt_llm/commands/serve.py``, the ``trtllm-serve`` click command):
  ``trtllm-serve MODEL --backend pytorch --tp_size --pp_size [--ep_size] --max_batch_size
  --max_num_tokens --max_seq_len --kv_cache_free_gpu_memory_fraction [--enable_chunked_prefill]``.
  Its KV fraction is of the memory free after the weights; the plan's KV pool (what vLLM's
  utilisation leaves after the weights) is that fraction of ``capacity - weights``. KV dtype and
  quantization are not flags: a prequantized checkpoint (its ``hf_quant_config.json``) sets both.

Replicas: the command is one replica's; a plan of N replicas runs N of them behind a load
balancer (vLLM's and SGLang's data parallelism over the same node is the alternative).
"""

from __future__ import annotations

import shlex
from dataclasses import field
from fractions import Fraction

from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import ServingEngine
from llm_cost.model.layout import Layout

__all__ = ["Launch", "LaunchPlan", "ENGINE_SOURCES", "launch_command", "hf_repo_id"]

#: The version each engine's flags were checked against, and the file and commit that define them.
ENGINE_SOURCES = {
    ServingEngine.VLLM: (
        "vLLM 0.11",
        "github.com/vllm-project/vllm vllm/engine/arg_utils.py @ 99d7eb5d (EngineArgs.add_cli_args)",
    ),
    ServingEngine.SGLANG: (
        "SGLang 0.5",
        "github.com/sgl-project/sglang python/sglang/srt/server_args.py @ 001067ff (ServerArgs fields)",
    ),
    ServingEngine.TRTLLM: (
        "TensorRT-LLM 1.0",
        "github.com/NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py @ 4c05a748 (trtllm-serve options)",
    ),
}


@record
class LaunchPlan:
    """What a launch command needs of a plan: the model id, one replica's layout, the replicas,
    the engine settings, the share of memory the engine takes (``gpu_memory_utilization``), the
    bytes of one GPU and its weights (for TensorRT-LLM's free-memory fraction), the KV cache's
    bits, and ``quantization`` (``fp8`` for online FP8 weights, None for the checkpoint's own)."""

    model_id: str
    layout: Layout
    replicas: int
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    prefix_caching: bool
    max_model_len: int
    gpu_memory_utilization: Fraction | float
    capacity_bytes: int
    weight_bytes: int | Fraction
    kv_bits: int
    quantization: str | None


@record
class Launch(Result):
    """One replica's launch command: ``argv`` (the words, as ``subprocess`` takes them) and
    ``command`` (the shell line), for ``engine`` at ``version`` (its flags checked against
    ``checked_against``); ``replicas`` copies serve the plan."""

    engine: ServingEngine
    version: str
    checked_against: str
    argv: tuple[str, ...]
    command: str
    replicas: int
    conventions: list[Note] = field(default_factory=list)


def hf_repo_id(url: str | None) -> str | None:
    """The Hugging Face repo id (``meta-llama/Meta-Llama-3-70B``) of a spec's source URL on
    huggingface.co, else None."""
    if not url or "huggingface.co/" not in url:
        return None
    parts = url.split("huggingface.co/", 1)[1].split("?")[0].split("/")
    if len(parts) < 2 or not parts[0] or not parts[1] or parts[0] in ("api", "datasets", "spaces"):
        return None
    return f"{parts[0]}/{parts[1]}"


def _f(name: str) -> str:
    """An engine's flag from its name: the name with its two leading dashes. Engine flags are
    another program's vocabulary, written here without them so that no string of this layer reads
    as one of llm-cost's own flags (those are the command line's: tests/test_error_fields.py)."""
    return "-" * 2 + name


def _fraction(x: Fraction | float) -> str:
    return f"{float(x):.2f}".rstrip("0").rstrip(".")


def launch_command(plan: LaunchPlan, engine: ServingEngine) -> Launch:
    """The launch command of ``plan`` on ``engine`` (module docstring). InputError when the plan
    has nothing the engine's flags can express (none today: every layout and setting maps)."""
    lay = plan.layout
    notes: list[Note] = []
    if engine == ServingEngine.VLLM:
        argv = ["vllm", "serve", plan.model_id, _f("tensor-parallel-size"), str(lay.tp)]
        argv += [_f("pipeline-parallel-size"), str(lay.pp)]
        argv += [_f("enable-expert-parallel")] if lay.ep > 1 else []
        argv += [
            _f("max-num-seqs"),
            str(plan.max_num_seqs),
            _f("max-num-batched-tokens"),
            str(plan.max_num_batched_tokens),
        ]
        argv += [_f("enable-chunked-prefill") if plan.chunked_prefill else _f("no-enable-chunked-prefill")]
        argv += [_f("gpu-memory-utilization"), _fraction(plan.gpu_memory_utilization)]
        argv += [_f("kv-cache-dtype"), "fp8" if plan.kv_bits == 8 else "auto"]
        argv += [_f("quantization"), plan.quantization] if plan.quantization else []
        argv += [_f("max-model-len"), str(plan.max_model_len)]
        argv += [] if plan.prefix_caching else [_f("no-enable-prefix-caching")]
    elif engine == ServingEngine.SGLANG:
        argv = ["python", "-m", "sglang.launch_server", _f("model-path"), plan.model_id]
        argv += [_f("tp-size"), str(lay.tp), _f("pp-size"), str(lay.pp)]
        argv += [_f("ep-size"), str(lay.ep)] if lay.ep > 1 else []
        argv += [_f("max-running-requests"), str(plan.max_num_seqs)]
        argv += [_f("chunked-prefill-size"), str(plan.max_num_batched_tokens) if plan.chunked_prefill else "-1"]
        argv += [_f("mem-fraction-static"), _fraction(plan.gpu_memory_utilization)]
        argv += [_f("kv-cache-dtype"), "fp8_e4m3" if plan.kv_bits == 8 else "auto"]
        argv += [_f("quantization"), plan.quantization] if plan.quantization else []
        argv += [_f("context-length"), str(plan.max_model_len)]
        argv += [] if plan.prefix_caching else [_f("disable-radix-cache")]
    elif engine == ServingEngine.TRTLLM:
        free = plan.capacity_bytes - plan.weight_bytes
        kv = plan.capacity_bytes * plan.gpu_memory_utilization - plan.weight_bytes
        share = min(0.95, max(0.05, float(kv / free))) if free > 0 else 0.9
        argv = ["trtllm-serve", plan.model_id, _f("backend"), "pytorch", _f("tp_size"), str(lay.tp)]
        argv += [_f("pp_size"), str(lay.pp)]
        argv += [_f("ep_size"), str(lay.ep)] if lay.ep > 1 else []
        argv += [_f("max_batch_size"), str(plan.max_num_seqs), _f("max_num_tokens"), str(plan.max_num_batched_tokens)]
        argv += [_f("max_seq_len"), str(plan.max_model_len)]
        argv += [_f("kv_cache_free_gpu_memory_fraction"), _fraction(share)]
        argv += [_f("enable_chunked_prefill")] if plan.chunked_prefill else []
        if plan.kv_bits == 8 or plan.quantization:
            notes.append(note("launch.trtllm_quantized"))
    else:  # pragma: no cover - a closed enum
        raise InputError(f"emit: {engine!r} is not one of vllm, sglang, trtllm", fields=("emit",))
    version, source = ENGINE_SOURCES[engine]
    if plan.replicas > 1:
        notes.append(note("launch.replicas", replicas=plan.replicas, gpus=lay.gpus))
    return Launch(engine, version, source, tuple(argv), shlex.join(argv), plan.replicas, notes)
