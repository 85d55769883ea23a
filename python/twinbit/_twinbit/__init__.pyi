"""
twinbit: bit-exact quantised projections (the compiled core of the twinbit package)
"""

from collections.abc import Sequence
from typing import Annotated

import numpy
from numpy.typing import NDArray

from twinbit._twinbit import (
    _conformance as _conformance,
    reference as reference
)


class TwinbitError(RuntimeError):
    """An error of the twinbit library: .code is the status name, .message the library's message."""

    code: str
    message: str


class Entry:
    """One entry of an artifact: name, kind, shape, precision."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str:
        """'strips' (quantised weights) or 'matrix_f32' (float rows)"""

    @property
    def precision(self) -> object:
        """'q8' or 'q4' for strips, None for a float matrix"""

    @property
    def shape(self) -> tuple[int, int]:
        """strips: (N, K); a float matrix: (rows, cols)"""

    def __repr__(self) -> str: ...

class Artifact:
    """A twinbit weight artifact (.tbsc), opened read-only."""

    def __init__(self, path: str, copy: bool = False) -> None:
        """
        Opens and validates the header and manifest; copy=True reads the whole file into memory.
        """

    @property
    def path(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    @property
    def entries(self) -> list[Entry]: ...

    def entry(self, name: str) -> Entry: ...

    def verify(self) -> None:
        """
        Checks every payload's checksum and padding; raises TwinbitError (DATA_LOSS) on damage.
        """

    def close(self) -> None:
        """Releases the file; bindings made from it keep working."""

    def __enter__(self) -> Artifact: ...

    def __exit__(self, *args) -> None: ...

    def __repr__(self) -> str: ...

def quantize_q8_0(rows: Annotated[NDArray, dict(writable=False)]) -> NDArray[numpy.uint8]:
    """
    Rows [n][k] of float32 (k % 32 == 0) -> uint8 [n][k/32*34]: GGUF q8_0 blocks (fp16 d, 32 int8), the quantiser `twinbit pack` uses.
    """

def quantize_q4_0(rows: Annotated[NDArray, dict(writable=False)]) -> NDArray[numpy.uint8]:
    """
    Rows [n][k] of float32 (k % 32 == 0) -> uint8 [n][k/32*18]: GGUF q4_0 blocks (fp16 d, 16 bytes of nibbles), the quantiser `twinbit pack` uses.
    """

def write_artifact(path: str, entries: Sequence[tuple[str, str, Annotated[NDArray, dict(writable=False)]]]) -> None:
    """
    Writes an artifact from (name, 'q8' | 'q4' | 'f32', rows [n][k]) tuples, packed as `twinbit pack` packs float weights ('f32': a float matrix).
    """

def backends() -> list:
    """
    The registered backends and their devices: a list of dicts (name, available, why_not, devices: [{index, name, available, why_not, description, features}]).
    """

class Backend:
    """
    A backend created from a spec: 'cpu', 'cuda:0', 'cpu,threads=8', 'plugin:PATH' or a plugin's path.
    """

    def __init__(self, spec: str = 'cpu') -> None: ...

    @property
    def spec(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def device(self) -> str: ...

    @property
    def features(self) -> str: ...

    def bind(self, artifact: Artifact, entry: object) -> Bound:
        """
        Binds an entry (a name or an Entry) of the artifact; the Bound keeps the artifact's memory and this backend alive.
        """

    def gdn_delta(self, state: Annotated[NDArray, dict(writable=False)], q: Annotated[NDArray, dict(writable=False)], k: Annotated[NDArray, dict(writable=False)], v: Annotated[NDArray, dict(writable=False)], g: Annotated[NDArray, dict(writable=False)], beta: Annotated[NDArray, dict(writable=False)]) -> tuple:
        """
        One gated-delta step: state (vh, kd, vd), q and k (kh, kd), v (vh, vd), g and beta (vh,) -> (new state, o (vh, vd)). The inputs are not modified.
        """

    def __repr__(self) -> str: ...

class Bound:
    """An artifact entry bound on a backend (Backend.bind); keeps both alive."""

    @property
    def entry(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def shape(self) -> tuple[int, int]:
        """strips: (N, K); a float matrix: (rows, cols)"""

    @property
    def backend(self) -> str: ...

    def gemm(self, x: Annotated[NDArray, dict(writable=False)], mode: str = 'f32') -> NDArray[numpy.float32]:
        """
        y = x W^T for x (M, K) or (K,) float32 (numpy, or anything with __dlpack__, read in place); mode 'f32' or 'i8' (x quantised with the contract's quantiser). Returns a new float32 array (M, N) or (N,).
        """

    def gemv(self, x: Annotated[NDArray, dict(writable=False)]) -> NDArray[numpy.float32]:
        """y = W x for a float-matrix entry: x (cols,) -> y (rows,)."""

    def __repr__(self) -> str: ...

def compare(a: Annotated[NDArray, dict(writable=False)], b: Annotated[NDArray, dict(writable=False)]) -> dict:
    """
    Compares two float32 arrays of one shape bit for bit: a dict with equal, differing (count), total, first_index (a tuple index of the first differing element, None when equal) and max_ulp (-0 and +0 are 1 ulp apart).
    """

class Runtime:
    """
    An artifact run on several backends, each gemm placed by overrides, a profile or the default plan (docs/RUNTIME.md), with the reference's bits.
    """

    def __init__(self, artifact_path: str, backends: Sequence[str] = ['cpu'], overrides: Sequence[str] | None = None, profile: str | None = None) -> None:
        """
        backends: specs ('cpu', 'cuda:0', ...); overrides: 'PATTERN=TARGET' rules, first match wins; profile: the path of a `twinbit calibrate` profile.
        """

    @property
    def backends(self) -> list[str]: ...

    def gemm(self, entry: str, x: Annotated[NDArray, dict(writable=False)], mode: str = 'f32') -> NDArray[numpy.float32]:
        """
        The entry's gemm of x (M, K) or (K,) float32, placed by the runtime; a new float32 array.
        """

    def describe(self, entry: str, m: int, mode: str = 'f32') -> dict:
        """
        Where a gemm of m rows would run and why: placement, why, fallbacks, predicted_us, predicted_choice_us.
        """

    def report(self) -> list:
        """Per strip entry: the latest placement, calls and fallbacks so far."""
