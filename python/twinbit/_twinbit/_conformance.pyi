"""The conformance suite (twinbit.conformance wraps it)."""

import twinbit._twinbit


def run_json(backend: twinbit._twinbit.Backend, sweep: str = 'quick', seed: int = 1, cases: int = 100, filter: str | None = None) -> str:
    """
    Runs the suite on `backend`; the report as `twinbit conformance --json` writes it.
    """
