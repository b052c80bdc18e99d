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
    the one front door (:mod:`llm_cost.api`): a package split by question (model, step, memory,
    experts, speculative, serving, training, inputs, positions, documents, calibration), each
    module loaded on first use; ``api.choices`` turns every user-level choice (weights dtype and
    bits, group size, compute dtype, KV dtype, memory accounting, profile and time model) into
    engine arguments and is the only place a default is decided; ``api.checks`` checks every
    argument, naming it. Its functions are importable from the package itself.
``report``, ``cli``
    Rich tables, JSON, CSV and plots from the result objects; Typer commands, one module per
    question as the API's, each parsing its flags, making one API call and rendering. Errors below
    the command line name API arguments and spec fields; ``cli.flags`` writes them as flags.

Python use::

    import llm_cost
    step = llm_cost.decode("llama3-8b", "h100", batch=64, context=2048)
    step.estimate_s, step.bound_s, step.to_dict()
"""

__version__ = "0.1.0"


def _api():  # noqa: ANN202
    from importlib import import_module

    return import_module("llm_cost.api")


def __getattr__(name: str):  # noqa: ANN202 - the API's own types
    """The Python API (:mod:`llm_cost.api`), imported on first use so the command line starts fast."""
    api = _api()
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'llm_cost' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_api().__all__])
