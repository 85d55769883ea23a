"""The porter's check: a numpy re-implementation of one projection, compared bit for bit with the
library, and the one place where it disagrees found by twinbit.compare, with its index."""

import numpy as np

import twinbit
from conftest import bits


def fma32(a, b, c):
    # float32 fma through float64: a*b is exact there (24 + 24 bits); the sum is rounded twice,
    # which can differ from one rounding only on exact float32 ties (not met by these inputs).
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def gemv_f32_port(w, x, zero_start=True):
    """docs/NUMERICS.md's gemv_f32: 32 lanes (lane l takes columns l, l+32, ...), each an fma chain
    from +0.0, then a halving tree. With zero_start=False, the port's bug: each lane starts from its
    first product instead of +0.0, which differs only where that product is -0.0."""
    rows, cols = w.shape
    s = np.zeros((rows, 32), np.float32)
    for lane in range(32):
        first = True
        for c in range(lane, cols, 32):
            if first and not zero_start:
                s[:, lane] = w[:, c] * x[c]
            else:
                s[:, lane] = fma32(w[:, c], np.full(rows, x[c], np.float32), s[:, lane])
            first = False
    off = 16
    while off >= 1:
        s[:, :off] = s[:, :off] + s[:, off:2 * off]
        off //= 2
    return s[:, 0].copy()


def test_a_numpy_port_and_its_one_difference(tmp_path):
    rng = np.random.default_rng(21)
    w = rng.standard_normal((48, 200)).astype(np.float32)
    w[17] = -0.0  # a pruned row, stored as negative zeros
    x = rng.random(200).astype(np.float32)  # non-negative activations (after a ReLU)
    path = str(tmp_path / "gemv.tbsc")
    twinbit.write_artifact(path, [("ssm_out", "f32", w)])
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(path), "ssm_out")
    y = bound.gemv(x)

    # The faithful port equals the library everywhere.
    assert np.array_equal(bits(gemv_f32_port(w, x)), bits(y))
    # The buggy port: -0.0 instead of +0.0 in row 17, and nowhere else.
    result = twinbit.compare(gemv_f32_port(w, x, zero_start=False), y)
    assert result == {"equal": False, "differing": 1, "total": 48, "first_index": (17,), "max_ulp": 1}
