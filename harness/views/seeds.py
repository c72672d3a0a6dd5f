"""Statistics over the seeds of one task, as a study keeps them."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from harness.results.study_record import Elementwise, Spread


def spread(values: list[float]) -> Spread:
    """Mean and spread of one quantity over seeds: the sample standard deviation (0 for one
    seed), the range and the values themselves."""
    array = np.asarray(values, dtype=float)
    return {
        "mean": float(array.mean()),
        "std": float(array.std(ddof=1)) if len(array) > 1 else 0.0,
        "min": float(array.min()),
        "max": float(array.max()),
        "n": len(array),
        "values": array.tolist(),
    }


def elementwise(arrays: list[ArrayLike]) -> Elementwise:
    """Mean and sample standard deviation, element by element, of same-shaped nested lists
    (per layer, or layers x heads) over seeds."""
    stacked = np.asarray(arrays, dtype=float)
    std = stacked.std(axis=0, ddof=1) if len(stacked) > 1 else np.zeros(stacked.shape[1:])
    return {"mean": stacked.mean(axis=0).tolist(), "std": std.tolist(), "n": len(stacked)}
