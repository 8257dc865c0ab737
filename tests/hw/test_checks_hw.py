"""Planted bugs under compute-sanitizer and under the simulator's checks, side by side.

Every planted bug (tcsim.kernels.planted) and every correct kernel runs its twin once under
each compute-sanitizer tool, and `tcsim.run` with checks on. The simulator must catch every
planted bug that a sanitizer tool catches and report nothing on a correct kernel.
kernel7's plants also run once outside the sanitizer, and the log records how many elements of
their D differ from the correct kernel's: what each bug does on the GPU.
``TCSIM_HW_LOG`` receives every verdict for docs/checks.md.
"""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tcsim
from tcsim.hw.sanitize import TOOLS, planted_effect, sanitize
from tcsim.kernels import HOPPER_KERNELS, KERNELS, kernel_named
from tcsim.kernels.checks import SimulationError
from tcsim.kernels.planted import PLANTED

pytestmark = pytest.mark.hw

SHAPE = (256, 256, 256)
HOPPER_SHAPE = (256, 256, 1024)  # kernel7's stages are first refilled at the fifth K tile
CORRECT = {**KERNELS, **HOPPER_KERNELS}


RAGGED = {"kernel7-no-edge-fill": (200, 256, 1000)}  # its bug needs the matrices' edge


def shape_of(name: str) -> tuple[int, int, int]:
    if name in RAGGED:
        return RAGGED[name]
    return HOPPER_SHAPE if kernel_named(name).entry in HOPPER_KERNELS else SHAPE


def inputs(shape: tuple[int, int, int]) -> tuple[np.ndarray, ...]:
    M, N, K = shape
    rng = np.random.default_rng(0)  # the inputs the sanitizer's child uses (tcsim.hw.sanitize)
    return (rng.uniform(-1, 1, (M, K)).astype(np.float16),
            rng.uniform(-1, 1, (K, N)).astype(np.float16),
            rng.uniform(-1, 1, (M, N)).astype(np.float16))


def simulator_verdict(name: str) -> str:
    try:
        tcsim.run(kernel_named(name), *inputs(shape_of(name)), 1.0, 0.5)
    except SimulationError as error:
        return f"{type(error).__name__}: {error}"
    return ""


def effect_on_the_gpu(name: str) -> str | None:
    """For kernel7's plants: what the planted twin's D looks like on the GPU."""
    if name in CORRECT or kernel_named(name).entry not in HOPPER_KERNELS:
        return None
    return planted_effect(name, shape_of(name))


# kernel11's plants (a promotion interval, a scale order) are wrong bits, not races or bad
# addresses: tests/hw/test_kernel11_hw.py runs their twins against their schedules.
@pytest.mark.parametrize("name", [n for n in PLANTED if not PLANTED[n].scaled] + list(CORRECT))
def test_simulator_catches_what_the_sanitizer_catches(name):
    with ThreadPoolExecutor(len(TOOLS) + 1) as pool:  # the tools' children run side by side
        effect = pool.submit(effect_on_the_gpu, name)
        verdicts = dict(zip(TOOLS, pool.map(
            lambda tool: sanitize(name, tool, shape_of(name), timeout=500), TOOLS)))
    simulator = simulator_verdict(name)
    path = os.environ.get("TCSIM_HW_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": "checks", "kernel": name, "shape": shape_of(name),
                                "simulator": simulator, "on_gpu": effect.result(),
                                "sanitizer": {t: {"errors": v.errors, "first": v.first,
                                                  "exit": v.exit_code, "s": v.seconds,
                                                  "report": v.report}
                                              for t, v in verdicts.items()}}) + "\n")
    if name in CORRECT:
        assert not simulator, f"false alarm on the correct {name}: {simulator}"
    elif any(v.caught for v in verdicts.values()):
        caught = [t for t, v in verdicts.items() if v.caught]
        assert simulator, f"{name}: {caught} caught it, the simulator did not"
