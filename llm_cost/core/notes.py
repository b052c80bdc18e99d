"""Conventions as data: a result lists the conventions it used as :class:`Note` values (a code
and the figures it depends on); :mod:`llm_cost.report.notes` turns each into a sentence. JSON
carries the codes and their parameters, so a script can tell which convention a number follows
without parsing prose."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from llm_cost.core.records import record

__all__ = ["Note", "note"]


@record
class Note:
    """One convention: ``code`` names it (``decode.bytes_read``), ``params`` hold its figures."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)


def note(code: str, **params: Any) -> Note:
    """A :class:`Note` with keyword parameters."""
    return Note(code, params)
