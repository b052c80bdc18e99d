"""Quantities as typed: token counts with binary suffixes, plain counts, grids, exact bytes."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype, StorageDtype, dtype_of
from llm_cost.core.units import exact, parse_context, parse_grid, parse_integer, to_bytes


def test_token_suffixes_are_binary():
    assert parse_context("8K", "--context") == 8192 and parse_context("128k", "--context") == 131_072
    assert parse_context("1M", "--context") == 2**20 and parse_context("128000", "--context") == 128_000


@pytest.mark.parametrize("text", ["1K", "2.5", "-3", "x", ""])
def test_plain_counts_refuse_suffixes_and_non_integers(text):
    with pytest.raises(InputError, match="--gamma"):
        parse_integer(text, "--gamma")


def test_grids_double_and_keep_their_end():
    assert parse_grid("1,2,4..256", "--batch", parse_integer) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert parse_grid("1..100", "--batch", parse_integer)[-2:] == [64, 100]
    assert parse_grid("1K..4K", "--context", parse_context) == [1024, 2048, 4096]
    with pytest.raises(InputError, match="--batch"):
        parse_grid("8..1", "--batch", parse_integer)


def test_grids_step_and_keep_their_end():
    assert parse_grid("1..10:3", "--batch", parse_integer) == [1, 4, 7, 10]
    assert parse_grid("1..11:3,64", "--batch", parse_integer) == [1, 4, 7, 10, 11, 64]
    assert parse_grid("1K..4K:1K", "--context", parse_context) == [1024, 2048, 3072, 4096]
    assert parse_grid("1..10000:1", "--batch", parse_integer) == list(range(1, 10_001))
    with pytest.raises(InputError, match="more than 10,000"):
        parse_grid("1..1000000000:1", "--batch", parse_integer)
    with pytest.raises(InputError, match="step of at least 1"):
        parse_grid("1..8:0", "--context", lambda t, w: parse_context(t, w, 0))


@given(st.integers(0, 10**30), st.sampled_from([Fraction(17, 4), Fraction(5), 16, 8, 4]))
def test_bytes_are_exact(elements, bits):
    b = to_bytes(elements, bits)
    assert b * 8 == elements * bits and (isinstance(b, int) or b.denominator != 1)
    assert exact(Fraction(6, 3)) == 2 and isinstance(exact(Fraction(6, 3)), int)


def test_one_dtype_table():
    """Storage formats are a subset of compute formats, with the same bits."""
    assert [d.bits for d in StorageDtype] == [Dtype(d.value).bits for d in StorageDtype]
    assert Dtype.TF32.bits == 32 and dtype_of("BF16") is Dtype.BF16
    with pytest.raises(InputError, match="tf32"):
        dtype_of("fp3", storage=False)


@given(st.integers(min_value=1, max_value=10**12))
def test_a_count_written_with_thousands_separators_reads_as_the_count(n):
    """An attack typed back a count the tool suggests ("give --gpus 2,835") and was refused; a whole
    number grouped in threes reads as itself, while a list's items are still split on commas."""
    assert parse_integer(f"{n:,}", "gpus", maximum=10**13) == n
    assert parse_context(f"{n:,}") == n
    assert parse_grid("1,000", "batch", lambda t, w: parse_integer(t, w, minimum=0)) == [1, 0]
    with pytest.raises(InputError):
        parse_integer("1,02", "gpus")


@pytest.mark.parametrize(
    ("value", "text"), [(1000.0, "1,000"), (1e5, "100,000"), (2.5, "2.5"), (0.125, "0.125"), (1e16, "1e+16")]
)
def test_a_value_given_is_echoed_short_and_thousands_separated(value, text):
    """An attacker read '1000 requests/s' in a plan's header (``:g``, which gives '1e+06' for a
    million): a whole value is thousands separated, another in its shortest form."""
    from llm_cost.core.units import fmt_given

    assert fmt_given(value) == text
