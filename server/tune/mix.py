"""Weight-space ensembling of the base and the tuned encoder (WiSE-FT, Wortsman et al. 2022).

Fine-tuning on the templates' texts alone pulls every nearby question towards some template, including
questions no template covers. Interpolating each weight between the base model and the tuned one keeps
part of what the base knew; the interpolated model is still one BERT, so serving costs the same.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def mixed(base: Mapping[str, np.ndarray], tuned: Mapping[str, np.ndarray], stock_share: float) -> dict[str, np.ndarray]:
    """stock_share x base + (1 - stock_share) x tuned per float tensor, in the base tensor's dtype; integer
    buffers come from `tuned` unmixed, and tensors only `base` has are kept as they are."""
    if not 0.0 <= stock_share < 1.0:
        raise ValueError(f"stock_share must be in [0, 1), got {stock_share}")
    out = dict(base)
    for name, weight in tuned.items():
        kind = np.asarray(base[name]).dtype
        value = np.asarray(weight, dtype=np.float32) if np.issubdtype(kind, np.floating) else np.asarray(weight)
        if stock_share and np.issubdtype(kind, np.floating):
            value = stock_share * np.asarray(base[name], dtype=np.float32) + (1.0 - stock_share) * value
        out[name] = value.astype(kind, copy=False)
    return out
