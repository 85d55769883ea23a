"""The Python results are the CLI's, byte for byte (`twinbit run` on the same artifact and x)."""

import pathlib
import subprocess

import numpy as np
import pytest

import twinbit
from conftest import REPO, bits


def run_cli(cli, *args):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("entry", ["attn_q.q8", "attn_q.q4"])
@pytest.mark.parametrize("mode", ["f32", "i8"])
def test_gemm_equals_twinbit_run(cli, tmp_path, artifact_path, x, entry, mode):
    np.save(tmp_path / "x.npy", x)
    run_cli(cli, "run", artifact_path, "--entry", entry, "--mode", mode,
            "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy"))
    from_cli = np.load(tmp_path / "y.npy")
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(artifact_path), entry)
    assert np.array_equal(bits(bound.gemm(x, mode=mode)), bits(from_cli))


def test_packed_model_equals_twinbit_run(cli, tmp_path):
    # A model the CLI imports (a GGUF fixture), run from Python and from the CLI.
    model = tmp_path / "tiny.tbsc"
    run_cli(cli, "pack", str(REPO / "tests/fixtures/import/tiny_llama.gguf"), "-o", str(model))
    art = twinbit.Artifact(str(model))
    art.verify()
    entry = next(e for e in art.entries if e.kind == "strips")
    x = np.random.default_rng(11).standard_normal((3, entry.shape[1])).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    run_cli(cli, "run", str(model), "--entry", entry.name, "--input", str(tmp_path / "x.npy"),
            "-o", str(tmp_path / "y.npy"))
    y = twinbit.Backend("cpu").bind(art, entry).gemm(x)  # an Entry binds as its name does
    assert np.array_equal(bits(y), bits(np.load(tmp_path / "y.npy")))
