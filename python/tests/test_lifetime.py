"""A Bound keeps its artifact's memory and its backend alive."""

import gc

import numpy as np

import twinbit
from conftest import bits


def test_bound_outlives_artifact_and_backend(artifact_path, x):
    art = twinbit.Artifact(artifact_path)
    backend = twinbit.Backend("cpu")
    bound = backend.bind(art, "attn_q.q8")
    before = bound.gemm(x)
    art.close()
    del art, backend
    gc.collect()
    assert np.array_equal(bits(bound.gemm(x)), bits(before))
    assert np.array_equal(bits(twinbit.reference.gemm_f32(bound, x)), bits(before))


def test_output_is_a_new_array(artifact_path, x):
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "attn_q.q8")
    y1, y2 = bound.gemm(x), bound.gemm(x)
    assert y1.flags.owndata or y1.base is not None
    y1[:] = 0  # writable, and not shared with the next call
    assert not np.array_equal(y1, y2)
