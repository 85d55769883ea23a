"""Backends against the scalar reference, bit for bit."""

import numpy as np
import pytest

import twinbit
from conftest import K, MATRIX_COLS, MATRIX_ROWS, N, bits


@pytest.mark.parametrize("entry", ["attn_q.q8", "attn_q.q4"])
@pytest.mark.parametrize("mode", ["f32", "i8"])
def test_gemm_equals_reference(artifact_path, x, entry, mode):
    art = twinbit.Artifact(artifact_path)
    bound = twinbit.Backend("cpu").bind(art, entry)
    y = bound.gemm(x, mode=mode)
    assert y.shape == (x.shape[0], N) and y.dtype == np.float32
    ref = twinbit.reference.gemm_f32(bound, x) if mode == "f32" else twinbit.reference.gemm_i8(bound, x)
    assert np.array_equal(bits(y), bits(ref))
    assert twinbit.compare(y, ref) == {"equal": True, "differing": 0, "total": y.size, "first_index": None, "max_ulp": 0}


def test_rows_alone_equal_rows_in_a_batch(artifact_path, x):
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "attn_q.q8")
    batch = bound.gemm(x)
    for r in range(x.shape[0]):
        alone = bound.gemm(x[r])  # a 1-D x gives a 1-D y
        assert alone.shape == (N,)
        assert np.array_equal(bits(alone), bits(batch[r]))


def test_gemm_reads_views_in_place(artifact_path):
    # Rows 2..4 of a larger array: a contiguous view, used without a copy.
    big = np.random.default_rng(3).standard_normal((8, K)).astype(np.float32)
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "attn_q.q8")
    assert np.array_equal(bits(bound.gemm(big[2:5])), bits(bound.gemm(big[2:5].copy())))


def test_gemv_and_gdn_equal_reference(artifact_path):
    backend = twinbit.Backend("cpu")
    bound = backend.bind(twinbit.Artifact(artifact_path), "ssm_beta")
    assert bound.kind == "matrix_f32" and bound.shape == (MATRIX_ROWS, MATRIX_COLS)
    v = np.random.default_rng(4).standard_normal(MATRIX_COLS).astype(np.float32)
    assert np.array_equal(bits(bound.gemv(v)), bits(twinbit.reference.gemv_f32(bound, v)))

    rng = np.random.default_rng(5)
    vh, kh, kd, vd = 4, 2, 32, 16
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    args = (f(vh, kd, vd), f(kh, kd), f(kh, kd), f(vh, vd), -np.abs(f(vh)), f(vh))
    state, o = backend.gdn_delta(*args)
    ref_state, ref_o = twinbit.reference.gdn_delta(*args)
    assert np.array_equal(bits(state), bits(ref_state)) and np.array_equal(bits(o), bits(ref_o))
    assert not np.array_equal(bits(state), bits(args[0]))  # the step changed the state, not its input


def test_quantize_activations_feeds_gemm_i8(x):
    codes, scales = twinbit.reference.quantize_activations(x)
    kp = (K + 31) // 32 * 32
    assert codes.shape == (x.shape[0], kp) and codes.dtype == np.int8
    assert scales.shape == (x.shape[0], kp // 32) and scales.dtype == np.float32
    assert codes.min() >= -127 and codes.max() <= 127
    assert np.all(codes[:, K:] == 0)  # the padding k
    # Each group's largest |x| becomes +-127.
    assert np.all(np.abs(codes[:, :32]).max(axis=1) == 127)


def test_block_quantisers_match_the_gguf_layout():
    rows = np.random.default_rng(6).standard_normal((3, 64)).astype(np.float32)
    q8 = twinbit.quantize_q8_0(rows)
    q4 = twinbit.quantize_q4_0(rows)
    assert q8.shape == (3, 2 * 34) and q4.shape == (3, 2 * 18)
    # q8_0 (llama.cpp's reference quantiser): d = amax / 127, stored as fp16, code = round(x / d).
    blocks = q8.reshape(3, 2, 34)
    d = (np.abs(rows).reshape(3, 2, 32).max(axis=2) / np.float32(127)).astype(np.float32)
    assert np.array_equal(blocks[:, :, :2].copy().view(np.float16).reshape(3, 2), d.astype(np.float16))
    inv = (np.float32(1) / d)[:, :, None]
    want = np.round(rows.reshape(3, 2, 32) * inv).astype(np.int8)
    assert np.array_equal(blocks[:, :, 2:].view(np.int8), want)
    with pytest.raises(ValueError, match="multiple of 32"):
        twinbit.quantize_q8_0(rows[:, :40].copy())


def test_backends_lists_the_cpu(artifact_path):
    listed = {b["name"]: b for b in twinbit.backends()}
    assert listed["cpu"]["available"] and listed["cpu"]["devices"][0]["available"]
    assert "gemm.q8" in listed["cpu"]["devices"][0]["features"]


def test_runtime_gives_the_reference_bits(artifact_path, x):
    rt = twinbit.Runtime(artifact_path, backends=["cpu"], overrides=["attn_q.*=cpu"])
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "attn_q.q4")
    for mode in ("f32", "i8"):
        ref = twinbit.reference.gemm_f32(bound, x) if mode == "f32" else twinbit.reference.gemm_i8(bound, x)
        assert np.array_equal(bits(rt.gemm("attn_q.q4", x, mode)), bits(ref))
    d = rt.describe("attn_q.q4", 5, "i8")
    assert d["placement"] == "cpu" and "override" in d["why"]
    assert {r["entry"]: r["calls"] for r in rt.report()}["attn_q.q4"] == 2


def test_conformance_report_is_the_cli_json():
    rep = twinbit.conformance.run("cpu", sweep="none", seed=3, cases=4)
    assert rep["passed"] is True
    assert rep["seed"] == 3 and rep["totals"]["cases"] == len(rep["cases"]) == 4
    assert rep["totals"]["equal"] + rep["totals"]["unsupported"] == 4
