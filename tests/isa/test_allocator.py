"""The glibc tuning for the engine's scratch memory (tcsim/isa/allocator.py)."""

import os
import platform
import subprocess
import sys

import pytest

CODE = (
    "import numpy as np, tcsim; from tcsim.isa.allocator import tune_allocator; "
    "A = np.ones((4, 16, 8), np.float16); B = np.ones((4, 8, 8), np.float16); "
    "C = np.zeros((4, 16, 8), np.float32); "
    "D = tcsim.mma('m16n8k8.row.col.f32.f16.f16.f32', A, B, C); "
    "assert (D == 8).all(); print(tune_allocator())"
)


def _applied(env_extra: dict) -> str:
    # A fresh interpreter: the setting is made once per process.
    env = {k: v for k, v in os.environ.items()
           if k not in ("TCSIM_MALLOC_TUNING", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the tuning is glibc's mallopt")
def test_the_engine_tunes_glibc_once_it_runs():
    assert _applied({}) == "True"


@pytest.mark.parametrize("env", [{"TCSIM_MALLOC_TUNING": "0"},
                                 {"MALLOC_TRIM_THRESHOLD_": "1000000"},
                                 {"MALLOC_MMAP_THRESHOLD_": "1000000"}])
def test_the_user_can_keep_glibc_as_it_is(env):
    assert _applied(env) == "False"
