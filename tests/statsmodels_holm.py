"""statsmodels' Holm adjustment, the tests' independent reference for ``evalnoise.stats.holm``.

``multipletests(method="holm")`` runs ``gc.collect()`` on every call (statsmodels'
``stats/multitest.py``), whose cost grows with the heap of the process calling it: in a test
worker that has imported the whole suite, a full collection per reference value. The adjusted
p-values do not depend on it, so the reference runs with the collection skipped."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
from statsmodels.stats.multitest import multipletests


def statsmodels_holm(pvalues) -> np.ndarray:
    """``multipletests(pvalues, method="holm")[1]`` without its ``gc.collect()``."""
    with mock.patch.object(gc, "collect", lambda *args: 0):
        return multipletests(pvalues, method="holm")[1]
