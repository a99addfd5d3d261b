"""Shared check of the tests that compare two records (dicts of arrays and scalars) for exact equality."""
from __future__ import annotations

import numpy as np


def assert_same_record(a: dict, b: dict) -> None:
    """The same keys; every array of the same shape, dtype and values (NaN equal to NaN), every scalar equal."""
    assert a.keys() == b.keys()
    for key, va in a.items():
        vb = b[key]
        if hasattr(va, "shape"):
            assert va.shape == vb.shape, key
            assert va.dtype == vb.dtype, key
            assert np.array_equal(va, vb, equal_nan=va.dtype.kind == "f"), key
        else:
            assert va == vb, key
