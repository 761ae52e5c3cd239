"""A column's texts made at C speed are the texts `cell_text` makes of each value, whatever the numbers."""

from __future__ import annotations

import math
import random
import struct

import pytest

from oz0.edge.cards.model import cell_text, cell_texts


def _random_floats(count: int) -> list[float]:
    rng = random.Random(14)
    out: list[float] = []
    while len(out) < count:
        bits = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        for value in (bits, rng.uniform(-1e5, 1e5), round(rng.uniform(0, 1e4), rng.randint(0, 6))):
            if math.isfinite(value):
                out.append(value)
    return out


@pytest.mark.parametrize("column", [
    (1, -2, 0, 2**63 - 1, -(2**63)),
    (2**64, 1),                                        # past 64 bits: orjson refuses, repr writes it
    (1.5, 2.0, -0.0, 0.1, 2 / 3, 1e15, 9999999999999998.0),
    (9.9e-05, 1.0), (1e-07, 1.0), (1e-05, 0.5),        # orjson writes these without repr's exponent
    (1e16, 1.5e300, 5e-324, 1.7976931348623157e308),   # exponents as repr writes them
    (1.0, math.inf), (math.nan,),                      # not finite: JSON's texts
    (True, 1), ("a", 1, None, [1], {"k": "v"}),
])
def test_a_column_of_numbers_reads_as_each_value_alone(column: tuple[object, ...]) -> None:
    assert cell_texts(column) == [cell_text(v) for v in column]


def test_random_floats_read_as_repr_writes_them() -> None:
    floats = _random_floats(60_000)
    for start in range(0, len(floats), 100):
        column = floats[start:start + 100]
        assert cell_texts(column) == [float.__repr__(v) for v in column]
