"""The CUDA backend from Python, where this build has it and a GPU is present (skipped otherwise):
the reference's bits, as from the CPU backend."""

import numpy as np
import pytest

import twinbit
from conftest import bits


@pytest.fixture(scope="module")
def cuda():
    try:
        return twinbit.Backend("cuda:0")
    except twinbit.TwinbitError as e:
        # INVALID_ARGUMENT: a build without the CUDA backend; UNAVAILABLE: no device here.
        if e.code in ("INVALID_ARGUMENT", "UNAVAILABLE"):
            pytest.skip(f"no CUDA backend here: {e.message}")
        raise


@pytest.mark.parametrize("entry", ["attn_q.q8", "attn_q.q4"])
@pytest.mark.parametrize("mode", ["f32", "i8"])
def test_cuda_gemm_equals_reference(cuda, artifact_path, x, entry, mode):
    bound = cuda.bind(twinbit.Artifact(artifact_path), entry)
    ref = twinbit.reference.gemm_f32(bound, x) if mode == "f32" else twinbit.reference.gemm_i8(bound, x)
    assert np.array_equal(bits(bound.gemm(x, mode=mode)), bits(ref))


def test_cuda_gemv_equals_reference(cuda, artifact_path):
    bound = cuda.bind(twinbit.Artifact(artifact_path), "ssm_beta")
    v = np.random.default_rng(9).standard_normal(bound.shape[1]).astype(np.float32)
    assert np.array_equal(bits(bound.gemv(v)), bits(twinbit.reference.gemv_f32(bound, v)))
