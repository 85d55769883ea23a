"""The committed type stubs are those of the module as built (python/gen_stubs.py)."""

import importlib.util
import pathlib
import sys

import pytest

from conftest import REPO


def test_stubs_are_current(tmp_path):
    if importlib.util.find_spec("nanobind") is None:
        pytest.skip("nanobind (the stub generator) is not installed here")
    sys.path.insert(0, str(REPO / "python"))
    try:
        import gen_stubs
    finally:
        sys.path.pop(0)
    gen_stubs.generate(tmp_path)
    committed = REPO / "python/twinbit/_twinbit"
    names = sorted(p.name for p in tmp_path.glob("*.pyi"))
    assert names == sorted(p.name for p in committed.glob("*.pyi"))
    for name in names:
        assert (tmp_path / name).read_text() == (committed / name).read_text(), (
            f"{name} is out of date: run python/gen_stubs.py with the module installed")
