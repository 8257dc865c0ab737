"""Why is it slow: GPU descriptions as data (`gpu`) and the speed-of-light model over a trace
(`explain`, also `Trace.explain`)."""

from .gpus import Constant, Gpu, gpu, gpu_names
from .model import Explanation, explain
from .occupancy import Occupancy, occupancy

__all__ = ["Constant", "Explanation", "Gpu", "Occupancy", "explain", "gpu", "gpu_names",
           "occupancy"]
