"""The WMMA instructions (PTX wmma.load, wmma.mma, wmma.store), as sm_90 runs them: the
qualifiers (`spec`), the fragment maps read off the H100 (`fragments`), the arithmetic as ptxas
lowers it (`arithmetic`) and the entry points (`api`). docs/wmma.md has the evidence.
"""

from .api import wmma, wmma_regs
from .fragments import fragment_map, wmma_fragment
from .spec import (
    PREFIX,
    WmmaSpec,
    fragment_registers,
    is_wmma_qualifier,
    load_cases,
    matrix_dims,
    parse_wmma,
    store_cases,
    supported_wmma_qualifiers,
)

__all__ = ["PREFIX", "WmmaSpec", "fragment_map", "fragment_registers", "is_wmma_qualifier",
           "load_cases", "matrix_dims", "parse_wmma", "store_cases",
           "supported_wmma_qualifiers", "wmma", "wmma_fragment", "wmma_regs"]
