"""Why is it slow: GPU descriptions as data (`gpu`), the speed-of-light model over a trace
(`explain`, also `Trace.explain`) and the choice of a kernel's tiles by it (`choose_tile`)."""

from .choose import TILE_VARIANTS, Choice, choose_tile
from .gpus import Constant, Gpu, gpu, gpu_names
from .model import Explanation, explain
from .occupancy import Occupancy, occupancy

__all__ = ["TILE_VARIANTS", "Choice", "Constant", "Explanation", "Gpu", "Occupancy",
           "choose_tile", "explain", "gpu", "gpu_names", "occupancy"]
