"""Planted bugs under compute-sanitizer and under the simulator's checks, side by side.

Every planted bug (tcsim.kernels.planted) and every correct kernel runs its twin once under
each compute-sanitizer tool, and `tcsim.run` with checks on. The simulator must catch every
planted bug that a sanitizer tool catches and report nothing on a correct kernel.
``TCSIM_HW_LOG`` receives every verdict for docs/checks.md.
"""

import json
import os

import numpy as np
import pytest

import tcsim
from tcsim.hw.sanitize import TOOLS, sanitize
from tcsim.kernels import KERNELS, kernel_named
from tcsim.kernels.checks import SimulationError
from tcsim.kernels.planted import PLANTED

pytestmark = pytest.mark.hw

SHAPE = (256, 256, 256)


def simulator_verdict(name: str) -> str:
    M, N, K = SHAPE
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    C = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    try:
        tcsim.run(kernel_named(name), A, B, C, 1.0, 0.5)
    except SimulationError as error:
        return f"{type(error).__name__}: {error}"
    return ""


@pytest.mark.parametrize("name", list(PLANTED) + list(KERNELS))
def test_simulator_catches_what_the_sanitizer_catches(name):
    verdicts = {tool: sanitize(name, tool, SHAPE) for tool in TOOLS}
    simulator = simulator_verdict(name)
    path = os.environ.get("TCSIM_HW_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": "checks", "kernel": name, "simulator": simulator,
                                "sanitizer": {t: {"errors": v.errors, "first": v.first,
                                                  "exit": v.exit_code}
                                              for t, v in verdicts.items()}}) + "\n")
    if name in KERNELS:
        assert not simulator, f"false alarm on the correct {name}: {simulator}"
    elif any(v.caught for v in verdicts.values()):
        caught = [t for t, v in verdicts.items() if v.caught]
        assert simulator, f"{name}: {caught} caught it, the simulator did not"
