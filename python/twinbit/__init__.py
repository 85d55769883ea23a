"""twinbit: bit-exact quantised projections on any backend, checked against a scalar reference.

    import numpy as np, twinbit
    art = twinbit.Artifact("model.tbsc")
    bound = twinbit.Backend("cpu").bind(art, "attn_q.q8")
    y = bound.gemm(np.ones((1, bound.shape[1]), np.float32))
    assert twinbit.compare(y, twinbit.reference.gemm_f32(bound, np.ones((1, bound.shape[1]), np.float32)))["equal"]

Errors of the library are twinbit.TwinbitError (a RuntimeError) with .code, the status name
("INVALID_ARGUMENT", "DATA_LOSS", ...), and .message; a wrong dtype is TypeError, a wrong shape,
non-contiguous or device memory is ValueError.
"""

from ._twinbit import (
    Artifact,
    Backend,
    Bound,
    Entry,
    Runtime,
    TwinbitError,
    backends,
    compare,
    quantize_q4_0,
    quantize_q8_0,
    reference,
    write_artifact,
)
from . import conformance

__version__ = "0.1.0"

__all__ = [
    "Artifact",
    "Backend",
    "Bound",
    "Entry",
    "Runtime",
    "TwinbitError",
    "backends",
    "compare",
    "conformance",
    "quantize_q4_0",
    "quantize_q8_0",
    "reference",
    "write_artifact",
]
