"""The conformance suite from Python: `twinbit conformance --json`'s report as a dict."""

import json
from typing import Any, Dict, Optional, Union

from ._twinbit import Backend
from ._twinbit import _conformance


def run(
    spec: Union[str, Backend] = "cpu",
    sweep: str = "quick",
    seed: int = 1,
    cases: int = 100,
    filter: Optional[str] = None,
) -> Dict[str, Any]:
    """Runs the conformance suite on a backend (a spec such as "cpu", "cuda:0", "plugin:PATH",
    or a Backend) and returns the report as the CLI's --json writes it: identity, totals, every
    case. `sweep` is "quick", "full", "none" or "exhaustive"; `cases` random cases are added;
    `filter` is a glob over case names. The run passed when report["passed"] is true."""
    backend = spec if isinstance(spec, Backend) else Backend(spec)
    return json.loads(_conformance.run_json(backend, sweep, seed, cases, filter))
