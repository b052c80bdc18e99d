"""The Python API, the one front door: the command line calls it, and so can a notebook.

One module per question, each imported on first use so that a command loads only its own:

``model``        load_model, load_gpu, defaults_used, params, kv, kv_sweep, import_config, catalog, show
``step``         flops, ridges, decode, decode_sweep, prefill, prefill_sweep, context, step_request (a StepRequest)
``memory``       fit, activations
``experts``      moe
``speculative``  spec
``serving``      serve, serve_compare (keywords), serve_request, compare_request (a ServeRequest)
``simulation``   simulate_serving (one replica under load: percentiles)
``training``     train, train_plan
``inputs``       image, video
``positions``    rope, numerics
``documents``    reproduce
``calibration``  calibrate, validate, validate_training

Every function takes a model and a GPU as a shipped name or alias, a path to a YAML spec or a
Hugging Face ``config.json``, an already loaded spec, or (models only) a ``config.json`` as a
dict; enum-valued choices as the enum or its value (``"fp8"``). Every default is decided in
:mod:`llm_cost.api.choices`, and every argument is checked by :mod:`llm_cost.api.checks`. Each
returns the result object the CLI renders (``.to_dict()`` is its ``--json``); bad input raises
:class:`LlmCostError` naming the argument, and only it: a failure the input caused beneath the
checks (a path the system refuses, a number too large to compute with) is raised as one too.

    >>> import llm_cost
    >>> llm_cost.params("llama3-8b").total_params
    8030261248
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from llm_cost.core.errors import InputError

#: The one exception type of the API: a name, file, config or argument that is not valid.
LlmCostError = InputError

#: Each public name and the module of this package that defines it.
EXPORTS = {
    **dict.fromkeys(
        ("load_model", "load_gpu", "defaults_used", "params", "kv", "kv_sweep", "import_config", "catalog", "show"),
        "model",
    ),
    **dict.fromkeys(
        ("flops", "ridges", "decode", "decode_sweep", "prefill", "prefill_sweep", "step_request", "context"), "step"
    ),
    **dict.fromkeys(("fit", "activations"), "memory"),
    "moe": "experts",
    "spec": "speculative",
    **dict.fromkeys(("serve", "serve_request", "serve_compare", "compare_request"), "serving"),
    "simulate_serving": "simulation",
    **dict.fromkeys(("train", "train_plan"), "training"),
    **dict.fromkeys(("image", "video"), "inputs"),
    **dict.fromkeys(("rope", "numerics"), "positions"),
    "reproduce": "documents",
    **dict.fromkeys(("calibrate", "validate", "validate_training"), "calibration"),
}
#: Value types the API's arguments take, with the modules that define them.
TYPES = {
    "ServeRequest": "llm_cost.api.requests",
    "StepRequest": "llm_cost.api.requests",
    "StepOptions": "llm_cost.api.requests",
    "Layout": "llm_cost.model.layout",
    "Target": "llm_cost.simulate.results",
    "Statistic": "llm_cost.core.choices",
}

__all__ = ["LlmCostError", *EXPORTS, *TYPES]


def _guarded(function: Any) -> Any:
    """``function`` behind the API's boundary: a failure the input caused beneath the checks (a
    path the system refuses, a number too large to compute with:
    :func:`~llm_cost.core.errors.input_error_of`) is raised as :class:`LlmCostError`, as the
    command line reports it; anything else (a bug, the environment) passes unchanged."""
    import functools

    from llm_cost.core.errors import input_error_of

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (OSError, OverflowError, RecursionError, MemoryError) as exc:
            refused = input_error_of(exc)
            if refused is None:
                raise
            raise refused from None

    return call


def __getattr__(name: str) -> Any:
    """An API function (behind the boundary, :func:`_guarded`) or type, its module imported on
    first use."""
    if name in EXPORTS:
        function = _guarded(getattr(import_module(f"llm_cost.api.{EXPORTS[name]}"), name))
        globals()[name] = function
        return function
    if name in TYPES:
        return getattr(import_module(TYPES[name]), name)
    raise AttributeError(f"module 'llm_cost.api' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *EXPORTS, *TYPES])
