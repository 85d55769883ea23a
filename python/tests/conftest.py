"""Fixtures of the Python suite: a small artifact written by the test (twinbit.write_artifact packs
float rows as `twinbit pack` does) and the CLI binary when TWINBIT_CLI names one."""

import os
import pathlib

import numpy as np
import pytest

import twinbit

REPO = pathlib.Path(__file__).resolve().parents[2]

# K = 100 is not a multiple of 32 (padded tail groups), N = 67 not one of the strip width.
N, K = 67, 100
MATRIX_ROWS, MATRIX_COLS = 9, 70


def weights(seed: int, n: int, k: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, k)).astype(np.float32)


@pytest.fixture(scope="session")
def artifact_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("artifact") / "model.tbsc"
    w = weights(1, N, K)
    twinbit.write_artifact(
        str(path),
        [
            ("attn_q.q8", "q8", w),
            ("attn_q.q4", "q4", w),
            ("ssm_beta", "f32", weights(2, MATRIX_ROWS, MATRIX_COLS)),
        ],
    )
    return str(path)


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("TWINBIT_CLI")
    if not path:
        pytest.skip("TWINBIT_CLI is not set (the path of the twinbit binary to compare with)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"TWINBIT_CLI={path} is not an executable")
    return path


@pytest.fixture()
def x() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((5, K)).astype(np.float32)


def bits(a: np.ndarray) -> np.ndarray:
    """The array's bits, so that equality is memcmp equality (NaN == NaN, -0 != +0)."""
    return np.ascontiguousarray(a).view(np.uint32)
