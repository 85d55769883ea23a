"""The GIL is released while twinbit computes: another Python thread keeps running during a call."""

import threading
import time

import numpy as np

import twinbit


def test_other_threads_run_during_a_call(tmp_path):
    w = np.random.default_rng(8).standard_normal((256, 1024)).astype(np.float32)
    path = str(tmp_path / "gil.tbsc")
    twinbit.write_artifact(path, [("big.q8", "q8", w)])
    bound = twinbit.Backend("cpu").bind(twinbit.Artifact(path), "big.q8")
    x = np.random.default_rng(9).standard_normal((96, 1024)).astype(np.float32)

    window = {}

    def call():
        window["start"] = time.perf_counter()
        twinbit.reference.gemm_f32(bound, x)  # the scalar reference: a fraction of a second
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=call)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    # Holding the GIL, the call would let this thread run only at the window's edges (a switch
    # interval, 5 ms, before the call starts and after it returns): never in its middle half.
    d = window["end"] - window["start"]
    assert d > 0.04, f"the call took {d:.3f} s: too short to tell"
    middle = [t for t in ticks if window["start"] + d / 4 < t < window["end"] - d / 4]
    assert len(middle) > 0, f"no tick of this thread in the middle half of a {d:.3f} s call"
