"""Bad input raises a clear exception; nothing crashes."""

import shutil

import numpy as np
import pytest

import twinbit
from conftest import K


@pytest.fixture()
def bound(artifact_path):
    return twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "attn_q.q8")


def test_wrong_dtype_is_type_error(bound, x):
    with pytest.raises(TypeError, match="float32"):
        bound.gemm(x.astype(np.float64))
    with pytest.raises(TypeError, match="float32"):
        bound.gemm(x.astype(np.float16))


def test_wrong_shape_is_value_error(bound, x):
    with pytest.raises(ValueError, match=f"K = {K}"):
        bound.gemm(np.zeros((2, K + 1), np.float32))
    with pytest.raises(ValueError, match="1 or 2 dimensions"):
        bound.gemm(np.zeros((2, 2, K), np.float32))
    with pytest.raises(ValueError, match="empty"):
        bound.gemm(np.zeros((0, K), np.float32))


def test_non_contiguous_is_value_error(bound, x):
    with pytest.raises(ValueError, match="C-contiguous"):
        bound.gemm(np.asfortranarray(x))
    wide = np.zeros((3, 2 * K), np.float32)
    with pytest.raises(ValueError, match="C-contiguous"):
        bound.gemm(wide[:, ::2])


def test_bad_mode_and_wrong_operation(artifact_path, bound, x):
    with pytest.raises(ValueError, match="'f32' or 'i8'"):
        bound.gemm(x, mode="q8")
    with pytest.raises(TypeError, match="strip set"):
        bound.gemv(x[0])
    matrix = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "ssm_beta")
    with pytest.raises(TypeError, match="float matrix"):
        matrix.gemm(x)


def test_closed_artifact(artifact_path):
    art = twinbit.Artifact(artifact_path)
    art.close()
    assert art.closed
    for use in (lambda: art.entries, art.verify, lambda: twinbit.Backend("cpu").bind(art, "attn_q.q8")):
        with pytest.raises(twinbit.TwinbitError, match="closed") as e:
            use()
        assert e.value.code == "FAILED_PRECONDITION" and isinstance(e.value, RuntimeError)
    with twinbit.Artifact(artifact_path) as a:
        assert len(a.entries) == 3
    assert a.closed


def test_library_errors_carry_the_code(tmp_path, artifact_path):
    with pytest.raises(twinbit.TwinbitError) as e:
        twinbit.Artifact(str(tmp_path / "missing.tbsc"))
    assert e.value.code == "INVALID_ARGUMENT" and "missing.tbsc" in e.value.message
    with pytest.raises(twinbit.TwinbitError, match="no entry 'nope'") as e:
        twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), "nope")
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(twinbit.TwinbitError) as e:
        twinbit.Backend("no_such_backend")
    assert e.value.code == "INVALID_ARGUMENT" and "cpu" in e.value.message  # lists the valid names
    with pytest.raises(twinbit.TwinbitError, match="plugin"):
        twinbit.Backend("plugin:" + str(tmp_path / "libmissing.so"))


def test_damaged_payload_is_data_loss(tmp_path, artifact_path):
    damaged = tmp_path / "damaged.tbsc"
    shutil.copy(artifact_path, damaged)
    data = bytearray(damaged.read_bytes())
    data[-100] ^= 0x01  # inside the last payload
    damaged.write_bytes(bytes(data))
    art = twinbit.Artifact(str(damaged))
    with pytest.raises(twinbit.TwinbitError) as e:
        art.verify()
    assert e.value.code == "DATA_LOSS"
