"""Inputs through DLPack: anything with __dlpack__ (numpy here, torch where installed)."""

import numpy as np
import pytest

import twinbit
from conftest import bits


class OnlyDLPack:
    """An object that offers its data through the DLPack protocol only (no buffer protocol)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_numpy_through_dlpack(artifact_path, x):
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "attn_q.q8")
    assert np.array_equal(bits(bound.gemm(OnlyDLPack(x))), bits(bound.gemm(x)))
    with pytest.raises(TypeError, match="float32"):
        bound.gemm(OnlyDLPack(x.astype(np.float64)))


def test_torch_tensors(artifact_path, x):
    torch = pytest.importorskip("torch")
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "attn_q.q8")
    t = torch.from_numpy(x.copy())
    assert np.array_equal(bits(bound.gemm(t, mode="i8")), bits(bound.gemm(x, mode="i8")))
    with pytest.raises(ValueError, match="C-contiguous"):
        bound.gemm(torch.from_numpy(np.asfortranarray(x)))
    with pytest.raises(TypeError, match="float32"):
        bound.gemm(t.double())
