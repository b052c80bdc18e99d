"""The command that runs a serving plan (``llm-cost serve --emit vllm|sglang|trtllm``): one
replica's launch command for vLLM, SGLang or TensorRT-LLM, each flag checked against the engine's
own argument parser at the version named (:data:`ENGINE_SOURCES`).

Flags, by engine (each is a parser entry of the file cited):

* vLLM (``vllm/engine/arg_utils.py``, ``EngineArgs.add_cli_args``): ``vllm serve MODEL
  --tensor-parallel-size --pipeline-parallel-size [--enable-expert-parallel] --max-num-seqs
  --max-num-batched-tokens --enable-chunked-prefill|--no-enable-chunked-prefill
  --gpu-memory-utilization --kv-cache-dtype auto|fp8 [--quantization fp8] --max-model-len
  [--no-enable-prefix-caching]`` (booleans are ``argparse.BooleanOptionalAction``: ``--x`` and
  ``--no-x``); an attention data-parallel layout adds ``--data-parallel-size`` (and beyond one
  node ``--data-parallel-size-local``), EPLB's redundant experts ``--enable-eplb --eplb-config``.
* SGLang (``python/sglang/srt/server_args.py``, ``ServerArgs``: each field's flag is its name
  with dashes, ``tp_size`` -> ``--tp-size``): ``python -m sglang.launch_server --model-path MODEL
  --tp-size --pp-size [--ep-size] --max-running-requests --chunked-prefill-size (-1: off)
  --mem-fraction-static --kv-cache-dtype auto|fp8_e4m3 [--quantization fp8] --context-length
  [--disable-radix-cache]``; an attention data-parallel layout adds ``--dp-size
  --enable-dp-attention`` (``--tp-size`` then counts all its GPUs; beyond one node ``--nnodes
  --node-rank``), EPLB's redundant experts ``--enable-eplb --ep-num-redundant-experts``. DeepEP's
  all-to-all (``--moe-a2a-backend deepep``) is left to the reader: it needs DeepEP installed.
* TensorRT-LLM (``tensorrt_llm/commands/serve.py``, the ``trtllm-serve`` click command):
  ``trtllm-serve MODEL --backend pytorch --tp_size --pp_size [--ep_size] --max_batch_size
  --max_num_tokens --max_seq_len --kv_cache_free_gpu_memory_fraction [--enable_chunked_prefill]``.
  Its KV fraction is of the memory free after the weights; the plan's KV pool (what vLLM's
  utilisation leaves after the weights) is that fraction of ``capacity - weights``. KV dtype and
  quantization are not flags: a prequantized checkpoint (its ``hf_quant_config.json``) sets both.

vLLM's version: the simulator follows vLLM V1 with async scheduling, the default since v0.14
(``vllm/config/vllm.py``, ``VllmConfig.__post_init__``: ``async_scheduling`` None resolves to True
unless pipeline parallelism, a non-EAGLE speculative method or an unsupported executor rules it
out; ``vllm/config/scheduler.py`` @ 1f8758d5 declares it None by default), so no flag asks for it.
The flags are ``EngineArgs`` fields of ``vllm/engine/arg_utils.py`` @ 99d7eb5d, the newest copy of
that file stored here, every one still a field of the V1 engine's parser.

Attention data parallelism (a MoE layout with ``dp`` > 1, :mod:`llm_cost.analyses.serving.moe_layouts`):
the command runs one replica of TP x DP GPUs; TensorRT-LLM's ``trtllm-serve`` has no flag for it
(``enable_attention_dp`` is an extra-options-file setting), so such a plan is refused for it.

Replicas: N replicas of a layout that fit one node together (N x TP x PP GPUs, PP 1) run as one
command with data parallelism (vLLM ``--data-parallel-size N``, SGLang ``--dp-size N``: one
server balancing requests over N engine ranks); otherwise, and for TensorRT-LLM, the command is
one replica's, run N times, each on its own GPUs (``CUDA_VISIBLE_DEVICES``) and port, behind a
load balancer.

Model support: vLLM's model registry (``vllm/model_executor/models/registry.py`` @ bf8e7624,
:data:`VLLM_REGISTRY_FAMILIES`) and the later model files of :data:`VLLM_MODEL_FILES` are checked for
the spec's ``model_type``; a family neither holds is warned about (that snapshot is older than the
version named: a newer family may run). SGLang's
and TensorRT-LLM's registries are not checked (said so).
"""

from __future__ import annotations

import shlex
from dataclasses import field
from fractions import Fraction

from llm_cost.core.choices import Router
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import ServingEngine
from llm_cost.model.layout import Layout, stage_layers

__all__ = [
    "Launch",
    "LaunchPlan",
    "ENGINE_SOURCES",
    "VLLM_REGISTRY_FAMILIES",
    "launch_command",
    "vllm_knows",
]

#: The HF architectures of vLLM's decoder-only text-generation and multimodal registries
#: (``_TEXT_GENERATION_MODELS`` and ``_MULTIMODAL_MODELS`` keys of
#: github.com/vllm-project/vllm vllm/model_executor/models/registry.py @ bf8e7624), as
#: :func:`_family` reduces them (lower case, no underscores, no ``ForCausalLM``-like suffix).
VLLM_REGISTRY_COMMIT = "bf8e7624"
_VLLM_ARCHITECTURES = """
AquilaModel AquilaForCausalLM ArceeForCausalLM ArcticForCausalLM MiniMaxForCausalLM MiniMaxText01ForCausalLM
MiniMaxM1ForCausalLM BaiChuanForCausalLM BaichuanForCausalLM BailingMoeForCausalLM BambaForCausalLM
BloomForCausalLM ChatGLMModel ChatGLMForConditionalGeneration CohereForCausalLM Cohere2ForCausalLM
DbrxForCausalLM DeciLMForCausalLM DeepseekForCausalLM DeepseekV2ForCausalLM DeepseekV3ForCausalLM
Dots1ForCausalLM Ernie4_5_ForCausalLM Ernie4_5_MoeForCausalLM ExaoneForCausalLM Exaone4ForCausalLM
FalconForCausalLM Fairseq2LlamaForCausalLM GemmaForCausalLM Gemma2ForCausalLM Gemma3ForCausalLM
Gemma3nForConditionalGeneration GlmForCausalLM Glm4ForCausalLM Glm4MoeForCausalLM GPT2LMHeadModel
GPTBigCodeForCausalLM GPTJForCausalLM GPTNeoXForCausalLM GraniteForCausalLM GraniteMoeForCausalLM
GraniteMoeHybridForCausalLM GraniteMoeSharedForCausalLM GritLM Grok1ModelForCausalLM HunYuanMoEV1ForCausalLM
HunYuanDenseV1ForCausalLM InternLMForCausalLM InternLM2ForCausalLM InternLM2VEForCausalLM InternLM3ForCausalLM
JAISLMHeadModel JambaForCausalLM LlamaForCausalLM LLaMAForCausalLM MambaForCausalLM FalconMambaForCausalLM
FalconH1ForCausalLM Mamba2ForCausalLM MiniCPMForCausalLM MiniCPM3ForCausalLM MistralForCausalLM
MixtralForCausalLM QuantMixtralForCausalLM MptForCausalLM MPTForCausalLM MiMoForCausalLM NemotronForCausalLM
NemotronHForCausalLM OlmoForCausalLM Olmo2ForCausalLM OlmoeForCausalLM OPTForCausalLM OrionForCausalLM
PersimmonForCausalLM PhiForCausalLM Phi3ForCausalLM PhiMoEForCausalLM Phi4FlashForCausalLM Plamo2ForCausalLM
QWenLMHeadModel Qwen2ForCausalLM Qwen2MoeForCausalLM Qwen3ForCausalLM Qwen3MoeForCausalLM RWForCausalLM
StableLMEpochForCausalLM StableLmForCausalLM Starcoder2ForCausalLM SolarForCausalLM TeleChat2ForCausalLM
TeleFLMForCausalLM XverseForCausalLM Zamba2ForCausalLM
AriaForConditionalGeneration AyaVisionForConditionalGeneration Blip2ForConditionalGeneration
ChameleonForConditionalGeneration DeepseekVLV2ForCausalLM FuyuForCausalLM Gemma3ForConditionalGeneration
GLM4VForCausalLM Glm4vForConditionalGeneration H2OVLChatModel InternVLChatModel Idefics3ForConditionalGeneration
SmolVLMForConditionalGeneration KeyeForConditionalGeneration KimiVLForConditionalGeneration
LlavaForConditionalGeneration LlavaNextForConditionalGeneration LlavaNextVideoForConditionalGeneration
LlavaOnevisionForConditionalGeneration MantisForConditionalGeneration MiniMaxVL01ForConditionalGeneration
MiniCPMO MiniCPMV Mistral3ForConditionalGeneration MolmoForCausalLM Ovis PaliGemmaForConditionalGeneration
Phi3VForCausalLM PixtralForConditionalGeneration QwenVLForConditionalGeneration Qwen2VLForConditionalGeneration
Qwen2_5_VLForConditionalGeneration Qwen2AudioForConditionalGeneration Phi4MMForCausalLM
TarsierForConditionalGeneration Tarsier2ForConditionalGeneration MllamaForConditionalGeneration
Llama4ForConditionalGeneration
"""
_SUFFIXES = ("forconditionalgeneration", "forcausallm", "lmheadmodel", "chatmodel", "model")


def _family(name: str) -> str:
    """An architecture or ``model_type`` reduced to its family: lower case, no underscores, no
    class suffix (``DeepseekV3ForCausalLM`` and ``deepseek_v3`` -> ``deepseekv3``; ``gemma3_text``
    -> ``gemma3``)."""
    text = name.lower().replace("_", "")
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and len(text) > len(suffix):
            return text[: -len(suffix)]
    return text[:-4] if text.endswith("text") and len(text) > 4 else text


#: The families of :data:`_VLLM_ARCHITECTURES`.
VLLM_REGISTRY_FAMILIES = frozenset(_family(a) for a in _VLLM_ARCHITECTURES.split())


#: HF ``model_type`` values vLLM runs that its registry snapshot (:data:`VLLM_REGISTRY_COMMIT`)
#: predates: each with the model file of github.com/vllm-project/vllm
#: ``vllm/model_executor/models/`` that runs it, at a commit where it was found (an attacker: ``serve
#: gpt-oss-120b --emit vllm`` warned that vLLM may not run gpt_oss, which it has since 0.10.1).
VLLM_MODEL_FILES = {
    "gpt_oss": "gpt_oss.py @ 0025d69b",
    "qwen3_next": "qwen3_next.py @ 6365b387",
    "qwen3_5": "qwen3_5.py @ 00def4f8",  # Qwen3_5ForConditionalGeneration
    "qwen3_5_moe": "qwen3_5.py @ 00def4f8",  # Qwen3_5MoeForConditionalGeneration, the same file
    "qwen3_vl": "qwen3_vl.py @ 4f5768c7",
    "qwen3_vl_moe": "qwen3_vl_moe.py @ e005f02c",
    "gemma4": "gemma4.py @ eee7972f",
    "minimax_m2": "minimax_m2.py @ fb33ec8c",
    "glm4_moe_lite": "glm4_moe_lite.py @ 778460ce",
    "kimi_k25": "kimi_k25.py @ dd4ad005",
    "mimo_v2_flash": "mimo_v2_flash.py @ 91cf2f13",
    "deepseek_v4": "deepseek_v4.py @ f1b76c19",
}


def vllm_knows(model_type: str) -> bool:
    """Whether vLLM runs the HF ``model_type``: its registry at :data:`VLLM_REGISTRY_COMMIT` holds
    an architecture of its family (:func:`_family`), or a later model file does
    (:data:`VLLM_MODEL_FILES`)."""
    return _family(model_type) in VLLM_REGISTRY_FAMILIES or model_type in VLLM_MODEL_FILES


#: The version each engine's flags were checked against, and the file and commit that define them.
ENGINE_SOURCES = {
    ServingEngine.VLLM: (
        "vLLM 0.15 (V1, async scheduling on by default since 0.14)",
        "github.com/vllm-project/vllm vllm/engine/arg_utils.py @ 99d7eb5d (EngineArgs fields, the newest copy "
        "stored); async scheduling: vllm/config/scheduler.py @ 1f8758d5 (None by default), resolved on by "
        "VllmConfig in vllm/config/vllm.py",
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
    node_gpus: int = 8  # GPUs of one node (data parallelism within it)
    model_type: str | None = None  # the HF model_type, for the engine's model registry
    kv_dtype: str | None = None  # the KV cache's dtype (bf16, fp8, int4, ...): None, the model's own
    num_hidden_layers: int = 0  # the decoder layers a pipeline splits (0: not known)


@record
class Launch(Result):
    """One replica's launch command: ``argv`` (the words, as ``subprocess`` takes them) and
    ``command`` (the shell line), for ``engine`` at ``version`` (its flags checked against
    ``checked_against``); the plan's ``replicas``: ``data_parallel`` of them in this one command
    (its data-parallel ranks), the command run ``replicas / data_parallel`` times."""

    engine: ServingEngine
    version: str
    checked_against: str
    argv: tuple[str, ...]
    command: str
    replicas: int
    conventions: list[Note] = field(default_factory=list)
    data_parallel: int = 1


def _f(name: str) -> str:
    """An engine's flag from its name: the name with its two leading dashes. Engine flags are
    another program's vocabulary, written here without them so that no string of this layer reads
    as one of llm-cost's own flags (those are the command line's: tests/test_error_fields.py)."""
    return "-" * 2 + name


def _fraction(x: Fraction | float) -> str:
    return f"{float(x):.2f}".rstrip("0").rstrip(".")


def data_parallel(engine: ServingEngine | str, layout: Layout, replicas: int, node_gpus: int) -> int:
    """The replicas one command runs as data-parallel ranks (module docstring): all of them when
    they fit one node together at PP 1 on vLLM or SGLang, else 1 (one command per replica). Never
    on vLLM with expert parallelism (its EP spans every data-parallel rank:
    ``ParallelConfig.data_parallel_size`` shards the MoE layers over TP x DP), nor for an
    attention-DP layout (its ranks are the command's data parallelism already)."""
    if str(engine) == str(ServingEngine.TRTLLM) or replicas <= 1 or layout.pp > 1 or layout.dp > 1:
        return 1
    if str(engine) == str(ServingEngine.VLLM) and layout.ep > 1:
        return 1
    return replicas if replicas * layout.gpus <= node_gpus else 1


def router_for(engine: ServingEngine | str, layout: Layout, replicas: int, node_gpus: int) -> Router:
    """The router that spreads requests over the replicas as the launch runs them: vLLM's data-parallel
    ranks behind its own load balancer (least loaded), SGLang's behind its data-parallel controller
    (round robin); replicas run as separate servers behind a load balancer, round robin
    (:func:`llm_cost.simulate.routers.router_of`)."""
    if str(engine) == str(ServingEngine.VLLM) and data_parallel(engine, layout, replicas, node_gpus) > 1:
        return Router.LEAST_LOADED
    return Router.ROUND_ROBIN


def launch_command(plan: LaunchPlan, engine: ServingEngine) -> Launch:
    """The launch command of ``plan`` on ``engine`` (module docstring). InputError for an
    attention data-parallel layout or redundant experts on TensorRT-LLM, whose ``trtllm-serve`` has
    no flag for either."""
    lay = plan.layout
    if lay.dp > 1 and engine == ServingEngine.TRTLLM:
        raise InputError(
            f"emit: the plan runs attention data parallelism ({lay.dp} ranks of TP {lay.tp}, EP {lay.ep}), which "
            "trtllm-serve has no flag for (TensorRT-LLM sets enable_attention_dp in an extra LLM API options "
            "file); emit vllm or sglang, or plan with engine trtllm (TP layouts only)",
            fields=("emit",),
        )
    if lay.redundant_experts and engine == ServingEngine.TRTLLM:
        raise InputError(  # an attack: the command had dropped them without a word
            f"emit: the plan holds {lay.redundant_experts} redundant experts (EPLB), which trtllm-serve has no flag "
            "for (TensorRT-LLM's MoE load balancer is set in an extra LLM API options file); emit vllm or sglang, "
            "or leave out redundant_experts",
            fields=("emit", "redundant_experts"),
        )
    notes: list[Note] = []
    dp = data_parallel(engine, lay, plan.replicas, plan.node_gpus)
    if engine == ServingEngine.VLLM:
        argv = _vllm_argv(plan, dp)
    elif engine == ServingEngine.SGLANG:
        argv = _sglang_argv(plan, dp)
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
    argv = _with_layer_partition(argv, plan, engine, notes)
    version, source = ENGINE_SOURCES[engine]
    notes += _kv_dtype_notes(plan, engine)
    notes += _layout_notes(plan, engine, dp)
    notes += _support_notes(engine, plan.model_type)
    return Launch(engine, version, source, tuple(argv), shlex.join(argv), plan.replicas, notes, dp)


#: The environment variable each engine reads an uneven pipeline's layers per stage from (vLLM:
#: ``VLLM_PP_LAYER_PARTITION``, vllm/distributed/utils.py ``get_pp_indices``; SGLang:
#: ``SGLANG_PP_LAYER_PARTITION``, python/sglang/srt/distributed/utils.py ``get_pp_indices``).
LAYER_PARTITION = {ServingEngine.VLLM: "VLLM_PP_LAYER_PARTITION", ServingEngine.SGLANG: "SGLANG_PP_LAYER_PARTITION"}


def _with_layer_partition(argv: list[str], plan: LaunchPlan, engine: ServingEngine, notes: list[Note]) -> list[str]:
    """``argv`` run with the plan's layers per pipeline stage (:func:`~llm_cost.model.layout.stage_layers`:
    the earlier stages take the remainder) when the stages cannot be even: vLLM and SGLang give the
    remainder to the last stages but one by default (61 layers over 5 stages: 12, 12, 12, 13, 12,
    where the plan weighed 13, 12, 12, 12, 12), so the command sets the split through ``env`` and the
    engine's variable (:data:`LAYER_PARTITION`); TensorRT-LLM's server takes none, which a note says
    (an attack: the plan's fullest GPU and the engine's differed by a layer)."""
    pp, layers = plan.layout.pp, plan.num_hidden_layers
    if pp <= 1 or not layers or layers % pp == 0:
        return argv
    split = ",".join(str(n) for n in stage_layers(layers, pp))
    variable = LAYER_PARTITION.get(engine)
    if variable is None:
        notes.append(note("launch.layer_partition", split=split, pp=pp, layers=layers))
        return argv
    return ["env", f"{variable}={split}", *argv]


def _vllm_argv(plan: LaunchPlan, dp: int) -> list[str]:
    """``vllm serve``'s words for ``plan`` (``dp`` replicas as data-parallel ranks). An attention-DP
    layout: ``--data-parallel-size`` its ranks, each with its share of the replica's sequences and
    token budget (vLLM's scheduler settings are per data-parallel rank: every engine core takes the
    same ``SchedulerConfig``), beyond one node ``--data-parallel-size-local`` the ranks of one."""
    lay = plan.layout
    ranks = lay.dp if lay.dp > 1 else 1
    argv = ["vllm", "serve", plan.model_id, _f("tensor-parallel-size"), str(lay.tp)]
    argv += [_f("pipeline-parallel-size"), str(lay.pp)]
    if ranks > 1:
        argv += [_f("data-parallel-size"), str(ranks)]
        if lay.gpus > plan.node_gpus:
            argv += [_f("data-parallel-size-local"), str(max(1, plan.node_gpus // lay.tp))]
    elif dp > 1:
        argv += [_f("data-parallel-size"), str(dp)]
    argv += [_f("enable-expert-parallel")] if lay.ep > 1 else []
    if lay.redundant_experts:
        argv += [_f("enable-eplb"), _f("eplb-config"), f'{{"num_redundant_experts": {lay.redundant_experts}}}']
    argv += [
        _f("max-num-seqs"),
        str(-(-plan.max_num_seqs // ranks)),
        _f("max-num-batched-tokens"),
        str(-(-plan.max_num_batched_tokens // ranks)),
    ]
    argv += [_f("enable-chunked-prefill") if plan.chunked_prefill else _f("no-enable-chunked-prefill")]
    argv += [_f("gpu-memory-utilization"), _fraction(plan.gpu_memory_utilization)]
    argv += [_f("kv-cache-dtype"), "fp8" if plan.kv_bits == 8 else "auto"]
    argv += [_f("quantization"), plan.quantization] if plan.quantization else []
    argv += [_f("max-model-len"), str(plan.max_model_len)]
    argv += [] if plan.prefix_caching else [_f("no-enable-prefix-caching")]
    return argv


def _sglang_argv(plan: LaunchPlan, dp: int) -> list[str]:
    """``sglang.launch_server``'s words for ``plan``. An attention-DP layout: ``--tp-size`` all its
    GPUs, ``--dp-size`` its ranks and ``--enable-dp-attention`` (SGLang's attention TP is tp / dp,
    ``ServerArgs._handle_data_parallelism``), ``--ep-size`` the EP ranks; the replica's sequences and
    token budget as they are (SGLang divides ``chunked_prefill_size`` by ``dp_size`` itself, and
    its ``max_running_requests`` is the server's); beyond one node ``--nnodes``."""
    lay = plan.layout
    attention_dp = lay.dp > 1
    argv = ["python", "-m", "sglang.launch_server", _f("model-path"), plan.model_id]
    argv += [_f("tp-size"), str(lay.tp * lay.dp if attention_dp else lay.tp), _f("pp-size"), str(lay.pp)]
    if attention_dp:
        argv += [_f("dp-size"), str(lay.dp), _f("enable-dp-attention")]
        if lay.gpus > plan.node_gpus:
            argv += [_f("nnodes"), str(-(-lay.gpus // plan.node_gpus)), _f("node-rank"), "0"]
    elif dp > 1:
        argv += [_f("dp-size"), str(dp)]
    argv += [_f("ep-size"), str(lay.ep)] if lay.ep > 1 else []
    if lay.redundant_experts:
        argv += [_f("enable-eplb"), _f("ep-num-redundant-experts"), str(lay.redundant_experts)]
    argv += [_f("max-running-requests"), str(plan.max_num_seqs)]
    argv += [_f("chunked-prefill-size"), str(plan.max_num_batched_tokens) if plan.chunked_prefill else "-1"]
    argv += [_f("mem-fraction-static"), _fraction(plan.gpu_memory_utilization)]
    argv += [_f("kv-cache-dtype"), "fp8_e4m3" if plan.kv_bits == 8 else "auto"]
    argv += [_f("quantization"), plan.quantization] if plan.quantization else []
    argv += [_f("context-length"), str(plan.max_model_len)]
    argv += [] if plan.prefix_caching else [_f("disable-radix-cache")]
    return argv


#: The KV dtypes each engine's KV-cache setting takes at the version of :data:`ENGINE_SOURCES`
#: (``auto``: the model's own dtype): its name, the values, and the one the plan's 8-bit KV is
#: asked as (vLLM's ``CacheConfig.cache_dtype``, SGLang's ``ServerArgs.kv_cache_dtype`` choices;
#: TensorRT-LLM's ``KvCacheConfig.dtype``, set in an ``--extra_llm_api_options`` file, whose 8-bit
#: case the ``launch.trtllm_quantized`` note explains).
_KV_CACHE_DTYPES = {
    ServingEngine.VLLM: ("vLLM", _f("kv-cache-dtype"), "auto, fp8, fp8_e4m3, fp8_e5m2", "fp8"),
    ServingEngine.SGLANG: ("SGLang", _f("kv-cache-dtype"), "auto, fp8_e4m3, fp8_e5m2", "fp8_e4m3"),
    ServingEngine.TRTLLM: ("TensorRT-LLM", "kv_cache_config.dtype (no trtllm-serve flag)", "auto, fp8", "fp8"),
}


def _kv_dtype_notes(plan: LaunchPlan, engine: ServingEngine) -> list[Note]:
    """A warning when the engine's KV-cache dtype setting cannot express the plan's KV dtype
    (int4, fp4, fp32, int8): the command asks the nearest it takes (``auto``, the model's 16-bit
    dtype, or FP8 for 8 bits, which TensorRT-LLM sets outside its command: the
    ``launch.trtllm_quantized`` note), so the engine's KV cache is not the one planned."""
    if plan.kv_dtype is None or plan.kv_dtype in ("bf16", "fp16", "fp8"):
        return []
    name, setting, accepted, fp8 = _KV_CACHE_DTYPES[engine]
    if plan.kv_bits == 8:
        asks = "can ask fp8 at most" if engine == ServingEngine.TRTLLM else f"asks {fp8}"
        keeps = f"FP8, the same 8 bits as the plan's {plan.kv_dtype} in another format"
    else:
        asks = "leaves it at auto" if engine == ServingEngine.TRTLLM else "asks auto"
        keeps = f"the model's 16-bit dtype, not the plan's {plan.kv_bits}-bit {plan.kv_dtype} (its KV memory differs)"
    return [
        note(
            "launch.kv_dtype_unexpressed",
            engine=name,
            setting=setting,
            asked=plan.kv_dtype,
            asks=asks,
            keeps=keeps,
            accepted=accepted,
        )
    ]


def _layout_notes(plan: LaunchPlan, engine: ServingEngine, dp: int) -> list[Note]:
    """What the command's layout means for running it: the attention-DP ranks (and the nodes they
    span), the replicas one command runs, or how to run the others."""
    lay = plan.layout
    if lay.dp > 1:
        nodes = -(-lay.gpus // plan.node_gpus)
        return [note("launch.attention_dp", engine=engine.value, ranks=lay.dp, tp=lay.tp, ep=lay.ep,
                     gpus=lay.gpus, nodes=nodes, replicas=plan.replicas)]  # fmt: skip
    if dp > 1:
        return [note("launch.data_parallel", replicas=dp, gpus=lay.gpus, node=plan.node_gpus)]
    if plan.replicas > 1:
        per_node = max(1, plan.node_gpus // lay.gpus)
        first = ",".join(str(i) for i in range(lay.gpus))
        second = ",".join(str(i) for i in range(lay.gpus, 2 * lay.gpus)) if per_node > 1 else None
        return [
            note(
                "launch.replicas",
                replicas=plan.replicas,
                gpus=lay.gpus,
                per_node=per_node,
                node=plan.node_gpus,
                first=first,
                second=second,
            )
        ]
    return []


def _support_notes(engine: ServingEngine, model_type: str | None) -> list[Note]:
    """A warning when vLLM's registry lacks the model's family (:func:`vllm_knows`); for the other
    engines, or a spec without a ``model_type``, that support is unchecked."""
    if engine == ServingEngine.VLLM and model_type:
        if vllm_knows(model_type):
            return []
        return [note("launch.unsupported", model_type=model_type, commit=VLLM_REGISTRY_COMMIT)]
    return [note("launch.support_unchecked", engine=engine.value, model_type=model_type or "unknown")]
