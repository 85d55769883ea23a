"""The scalar reference: the contract every backend equals bit for bit."""

from typing import Annotated

import numpy
from numpy.typing import NDArray

import twinbit._twinbit


def gemm_f32(bound: twinbit._twinbit.Bound, x: Annotated[NDArray, dict(writable=False)]) -> NDArray[numpy.float32]:
    """
    The reference gemm in activation mode F32 on the weights of `bound`: x (M, K) or (K,).
    """

def gemm_i8(bound: twinbit._twinbit.Bound, x: Annotated[NDArray, dict(writable=False)]) -> NDArray[numpy.float32]:
    """
    The reference gemm in activation mode I8: x is quantised with quantize_activations first.
    """

def quantize_activations(x: Annotated[NDArray, dict(writable=False)]) -> tuple:
    """
    The I8 activation quantiser: x (M, K) -> (codes int8 (M, Kp), scales float32 (M, Kp/32)), Kp = 32*ceil(K/32).
    """

def gemv_f32(bound: twinbit._twinbit.Bound, x: Annotated[NDArray, dict(writable=False)]) -> NDArray[numpy.float32]:
    """The reference gemv of a float-matrix entry: x (cols,) -> (rows,)."""

def gdn_delta(state: Annotated[NDArray, dict(writable=False)], q: Annotated[NDArray, dict(writable=False)], k: Annotated[NDArray, dict(writable=False)], v: Annotated[NDArray, dict(writable=False)], g: Annotated[NDArray, dict(writable=False)], beta: Annotated[NDArray, dict(writable=False)]) -> tuple:
    """
    The reference gated-delta step (same arguments and results as Backend.gdn_delta).
    """
