"""Kernel twins with a part taken out, to time the rest: the switches of benchmarks/cuda/
explore.cuh (EXPLORE_NO_C, EXPLORE_NO_D, EXPLORE_NO_EPILOGUE, EXPLORE_NO_MMA), which hang on
hopper.cuh's one timing hook. Timing bounds, not kernels: the product's twins have no switch."""

from __future__ import annotations

import dataclasses

from bench_cuda import CUDA  # this folder's

SWITCHES = frozenset({"EXPLORE_NO_C", "EXPLORE_NO_D", "EXPLORE_NO_EPILOGUE", "EXPLORE_NO_MMA"})


def explore(launch, **defines: int):
    """``launch`` (a `tcsim.hw.launch.Launch` of a Hopper twin) compiled with explore.cuh ahead
    of its source and ``defines`` (switches, or the twin's own constants) on top of its own."""
    from tcsim.hw import runtime

    text = launch.source if "\n" in launch.source else runtime.source_text(launch.source)
    return dataclasses.replace(launch, source='#include "explore.cuh"\n' + text,
                               defines={**launch.defines, **defines},
                               include=(*launch.include, str(CUDA)))
