"""llm-cost: exact cost arithmetic for decoder-only LLMs.

The package is arranged in layers; each imports only the layers below it (``tests/test_layers.py``
fails on an upward import or a cycle, imports inside functions included):

``core``
    errors, the engine's enums and the one dtype table (``core.types``), parsing and formatting
    of quantities (``core.units``).
``specs``
    the schemas of model and GPU specs (frozen dataclasses, validated by pydantic when a file is
    read), file reading, shipped names and aliases, Hugging Face ``config.json`` (``specs.hf``).
``model``
    the structure: the weight-tensor list with each tensor's shard rule (``model.structure``),
    parameters, the cache's shape and KV bytes, and what one GPU of a layout holds
    (``model.layout``).
``workload``
    a step as a list of operators on each GPU (``workload.step.build_step``): GEMMs, attention,
    recurrences, vectors, embedding rows and collectives, with FLOPs and bytes by category;
    expert routing; forward FLOPs by group.
``perf``
    time models: operators + GPU -> seconds (``perf.timemodel``: the Roofline bound and the
    MFU/MBU estimate behind one interface); ridge points.
``simulate``
    serving under load: one engine replica's scheduler (vLLM V1's continuous batching, chunked
    prefill, prefix caching, preemption) simulated step by step on a workload (arrivals, length
    distributions, shared prefixes, traces), each step timed by a ``perf`` time model
    (``simulate.simulate``); percentiles of TTFT, ITL, TPOT and E2E.
``analyses``
    one module per question (roofline, deployment/fit, speculative, context, moe, training,
    memory, multimodal, rope, numerics, reproduce, catalog, import), each returning a result
    object of numbers.
``api``
    the Python API: one function per question with the command line's defaults
    (``llm_cost.params``, ``llm_cost.decode`` ...), importable from the package itself.
``report``, ``cli``
    Rich tables and JSON from those objects; Typer commands that parse, call and render.

Python use::

    import llm_cost
    step = llm_cost.decode("llama3-8b", "h100", batch=64, context=2048)
    step.estimate_s, step.bound_s, step.to_dict()
"""

__version__ = "0.1.0"

_API = (
    "LlmCostError",
    "Layout",
    "load_model",
    "load_gpu",
    "params",
    "kv",
    "decode",
    "prefill",
    "fit",
    "moe",
    "spec",
    "context",
    "train",
    "serve",
    "MemoryPolicy",
    "DEPLOYMENT",
    "DOCUMENTS",
)

__all__ = ["__version__", *_API]


def __getattr__(name: str):  # noqa: ANN202 - the API's own types
    """The Python API (``llm_cost.api``), imported on first use so the command line starts fast."""
    if name in _API:
        from llm_cost import api

        return getattr(api, name)
    raise AttributeError(f"module 'llm_cost' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
