"""The kernels' CUDA twins, as in `tcsim.kernels`: ``sources`` writes a ladder kernel's twin from
its `Kernel`, ``twin`` runs any twin; the headers the twins share (``gemm.cuh``, ``hopper.cuh``,
``gemm_common.cuh``) and the seeds' hand-written twins sit beside it."""

from .sources import twin_source
from .twin import device_launch, run, twin_launch

__all__ = ["device_launch", "run", "twin_launch", "twin_source"]
