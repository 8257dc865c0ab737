"""Sustained speed, SM clock and power: cuBLAS and the twins, each launched back to back.

    python benchmarks/clock_power.py [--seconds 2] [--rounds 3] [--kernels kernel10]
                                     [--shapes 8192x8192x8192] [--json FILE]

bench_gpu.py times single launches behind an idle spin; here each contender runs alone for
``--seconds`` (after a warm-up of a fifth of that), launch after launch on rotating inputs, as a
training loop does, while a thread reads the GPU's SM clock, board power and clock-limiting
reasons through NVML every 5 ms. Contenders take turns, ``--rounds`` times, each round starting
one contender later (a rested GPU favours whoever runs first, so the first contender also
heats it for ``--seconds`` before anything is measured). Per contender and
round: TFLOP/s (2 M N K times launches over the CUDA-event time), the median SM clock and
power over the samples taken while it ran, the limiting reasons seen in most samples, and
cycles per launch (time times the median clock): a kernel that needs fewer cycles but draws
more power can still finish later, when the power cap lowers its clock. The kernels run with
alpha 1 and beta 0, as cuBLAS's matmul. Needs CuPy, NVML (the driver's libnvidia-ml) and a GPU.
"""

from __future__ import annotations

import ctypes
import json
import statistics
import threading
import time
from collections import Counter
from functools import partial

import numpy as np
from bench_gpu import _kernel, parse_shapes, references, variant_parser

import tcsim
from tcsim.hw.kernels import device_launch
from tcsim.hw.launch import launcher

# nvmlClocksEventReasons bits (nvml.h), the ones a loaded GPU shows
REASONS = {0x1: "idle", 0x4: "power cap", 0x8: "hw slowdown", 0x20: "sw thermal",
           0x40: "hw thermal", 0x80: "power brake"}
NVML_CLOCK_SM = 1


class Nvml:
    """The few NVML queries this benchmark reads, through ctypes (no extra dependency), on the
    GPU CuPy uses (found by its PCI bus id: NVML's indices ignore CUDA_VISIBLE_DEVICES)."""

    def __init__(self) -> None:
        import cupy

        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._call("nvmlInit_v2")
        self.handle = ctypes.c_void_p()
        bus = cupy.cuda.Device().pci_bus_id.encode()
        self._call("nvmlDeviceGetHandleByPciBusId_v2", bus, ctypes.byref(self.handle))

    def _call(self, name: str, *args) -> None:
        code = getattr(self.lib, name)(*args)
        if code != 0:
            raise RuntimeError(f"NVML {name} failed with code {code}")

    def sample(self) -> tuple[int, float, int]:
        """SM clock (MHz), board power (W), clock-limiting reasons (bit mask)."""
        clock, milliwatts, reasons = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        self._call("nvmlDeviceGetClockInfo", self.handle, NVML_CLOCK_SM, ctypes.byref(clock))
        self._call("nvmlDeviceGetPowerUsage", self.handle, ctypes.byref(milliwatts))
        self._call("nvmlDeviceGetCurrentClocksThrottleReasons", self.handle,
                   ctypes.byref(reasons))
        return clock.value, milliwatts.value / 1e3, reasons.value


def sustained(fn, seconds: float, nvml: Nvml) -> dict:
    """Launch ``fn(i)`` back to back for about ``seconds``; the time per launch and the NVML
    samples taken meanwhile."""
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    fn(0)
    end.record()
    end.synchronize()
    per_launch = cupy.cuda.get_elapsed_time(start, end) / 1e3
    warm = time.perf_counter() + seconds / 5
    i = 0
    while time.perf_counter() < warm:  # in step with the GPU: no long queue left behind
        fn(i)
        i += 1
        cupy.cuda.Device().synchronize()
    launches = max(int(seconds / per_launch), 3)
    samples, done = [], threading.Event()

    def sampler() -> None:
        while not done.is_set():
            samples.append(nvml.sample())
            time.sleep(0.005)

    thread = threading.Thread(target=sampler)
    thread.start()
    start.record()
    for i in range(launches):
        fn(i)
    end.record()
    end.synchronize()
    done.set()
    thread.join()
    if not samples:
        raise RuntimeError("NVML gave no sample while the launches ran")
    seconds_each = cupy.cuda.get_elapsed_time(start, end) / 1e3 / launches
    clock = statistics.median(s[0] for s in samples)
    reasons = Counter(name for s in samples for bit, name in REASONS.items() if s[2] & bit)
    return {"launches": launches, "seconds": seconds_each, "sm_mhz": clock,
            "watts": statistics.median(s[1] for s in samples),
            "reasons": sorted(r for r, n in reasons.items() if 2 * n > len(samples)),
            "cycles": seconds_each * clock * 1e6, "samples": len(samples)}


def main() -> None:
    p = variant_parser(__doc__)
    p.set_defaults(accumulate=["f32", "f16"], shapes=["8192x8192x8192", "4096x4096x4096"])
    p.add_argument("--kernels", nargs="*", default=["kernel10"])
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    nvml = Nvml()
    rng = np.random.default_rng(0)
    rows = []
    for M, N, K in parse_shapes(args.shapes):
        sets, D, contenders = references(M, N, K, rng)
        for name in args.kernels:
            kernel = tcsim.kernels.kernel_named(name)
            for acc in args.accumulate:
                p_ = kernel.params(accumulate=acc)
                contenders[name, acc] = partial(
                    _kernel, [launcher(device_launch(kernel, p_, *s, D)) for s in sets])
        order = list(contenders.items())
        sustained(order[0][1], args.seconds, nvml)  # heat the GPU first
        for r in range(args.rounds):
            for (label, acc), fn in order[r % len(order):] + order[:r % len(order)]:
                row = {"contender": label, "accumulate": acc, "shape": [M, N, K], "round": r,
                       **sustained(fn, args.seconds, nvml)}
                row["tflops"] = 2 * M * N * K / row["seconds"] / 1e12
                rows.append(row)
                print(f"{label:12s} {acc} {M}x{N}x{K} round {r}: {row['tflops']:6.1f} TFLOP/s "
                      f"{row['sm_mhz']:5.0f} MHz {row['watts']:5.0f} W "
                      f"{row['cycles'] / 1e6:7.3f} Mcycles {','.join(row['reasons']) or '-'}",
                      flush=True)
    print("\nmedians over the rounds:")
    for key in dict.fromkeys((r["contender"], r["accumulate"], tuple(r["shape"])) for r in rows):
        mine = [r for r in rows if (r["contender"], r["accumulate"], tuple(r["shape"])) == key]
        med = {k: statistics.median(r[k] for r in mine)
               for k in ("tflops", "sm_mhz", "watts", "cycles")}
        print(f"{key[0]:12s} {key[1]} {'x'.join(map(str, key[2]))}: {med['tflops']:6.1f} "
              f"TFLOP/s {med['sm_mhz']:5.0f} MHz {med['watts']:5.0f} W "
              f"{med['cycles'] / 1e6:7.3f} Mcycles")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
