"""tune.stock_share: the written weights lie between the stock and the tuned ones, per float tensor."""

from __future__ import annotations

import numpy as np
import pytest

from server.tune.mix import mixed


def _pair() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    base = {
        "w": np.array([[0.0, 2.0], [4.0, -1.0]], dtype=np.float32),
        "ids": np.arange(3, dtype=np.int64),
        "pooler.dense.weight": np.ones(2, dtype=np.float16),
    }
    tuned = {"w": np.array([[1.0, 0.0], [2.0, 3.0]], dtype=np.float32), "ids": np.arange(3, dtype=np.int64)}
    return base, tuned


def test_share_zero_writes_the_tuned_weights_and_keeps_untouched_tensors() -> None:
    base, tuned = _pair()
    out = mixed(base, tuned, 0.0)
    np.testing.assert_array_equal(out["w"], tuned["w"])
    assert out["pooler.dense.weight"] is base["pooler.dense.weight"]
    np.testing.assert_array_equal(out["ids"], base["ids"])
    assert out["ids"].dtype == np.int64


def test_a_share_interpolates_each_float_weight() -> None:
    base, tuned = _pair()
    out = mixed(base, tuned, 0.25)
    np.testing.assert_allclose(out["w"], 0.25 * base["w"] + 0.75 * tuned["w"])
    assert out["w"].dtype == np.float32
    np.testing.assert_array_equal(out["ids"], base["ids"])


@pytest.mark.parametrize("share", [-0.1, 1.0, 1.5])
def test_a_share_outside_zero_to_one_is_refused(share: float) -> None:
    base, tuned = _pair()
    with pytest.raises(ValueError, match="stock_share"):
        mixed(base, tuned, share)
