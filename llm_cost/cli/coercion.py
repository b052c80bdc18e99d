"""Typer's parameter coercion without Pydantic where the result is already known.

Typer (0.29 here; 0.24 still used Click's types) turns each command-line value into its
parameter's type through a Pydantic ``TypeAdapter``, built the first time the parameter is
processed, even for a value that is not given (None). That imports ``typer._adapters`` and with
it most of Pydantic (as long as importing Typer and Rich themselves, for a command that needs no
Pydantic of its own) and builds a validator per parameter (``params llama3-8b``, whose spec
classes import Pydantic anyway, spent about 30 ms of its 300 there). :func:`install` gives
each parameter of a command a coercion that returns, without Pydantic, the value Typer's own
would return in the common cases:

- a value not given (None): Typer's base class returns None (or ``()``) before any adapter;
- an option with a ``parser`` (every typed option of :mod:`llm_cost.cli.options`): the adapter
  only calls the parser, so a value it parses is the result;
- an Enum or Literal choice: Typer's own ``coerce_cli_choice``, the function its adapter calls;
- a ``str`` parameter given a ``str``: the adapter returns it unchanged.

Anything else, and every value the fast path refuses (a parser or a choice raising), goes to
Typer's own coercion, built then, so errors and their messages are Typer's, unchanged. With a
Typer that has no such coercion (it used Click's types), :func:`install` does nothing.
"""

from __future__ import annotations

from typing import Any

try:
    from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    from typer._param_types import choice_coercion_annotation, coerce_cli_choice
except ImportError:  # a Typer that coerces through Click's types: nothing to speed up
    RuntimeParam = None  # type: ignore[assignment,misc]


def install(command: Any, help_option_names: list[str]) -> None:
    """Give every parameter of the Click ``command`` (built by Typer) the fast coercion, its help
    option included (Click makes that one when parsing starts, from ``help_option_names``, and
    keeps it: it is made here first). A file parameter keeps Typer's own (it opens the file)."""
    if RuntimeParam is None:
        return
    help_option = command.get_help_option(command.context_class(command, help_option_names=help_option_names))
    for param in [*command.params, help_option]:
        descriptor = getattr(param, "type_descriptor", None)
        unbuilt = getattr(param, "_runtime_param", False) is None  # Typer builds its own on first use
        if descriptor is not None and descriptor.file_annotation is None and unbuilt:
            param._runtime_param = _FastRuntimeParam(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )


if RuntimeParam is not None:

    class _FastRuntimeParam(RuntimeParam):
        """Typer's ``RuntimeParam`` (None handling and multi-value checks are its own) whose
        value coercion takes the fast path of the module docstring, else Typer's adapter."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info, annotation = self.parameter_info, self.annotation
            choice = choice_coercion_annotation(annotation, info)
            try:
                if info.parser is not None:
                    return info.parser(value)
                if choice is not None:
                    return coerce_cli_choice(value, choices=choice[0], case_sensitive=choice[1], ctx=ctx)
                if annotation is str and type(value) is str:
                    return value
            except Exception:  # noqa: BLE001 - Typer's own coercion reports it, as it would have
                pass
            typer_own = build_runtime_param(TypeDescriptor(annotation, info, file_annotation=None))
            return typer_own._coerce_value(value, param=param, ctx=ctx)
