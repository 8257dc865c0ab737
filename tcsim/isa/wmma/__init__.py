"""The WMMA instructions (PTX wmma.load, wmma.mma, wmma.store), as sm_90 runs them.

`spec` names the legal instructions; the fragment maps read off the H100 and the arithmetic
follow as they are measured (docs/wmma.md).
"""

from .spec import (
    PREFIX,
    WmmaSpec,
    fragment_registers,
    is_wmma_qualifier,
    load_cases,
    parse_wmma,
    store_cases,
    supported_wmma_qualifiers,
)

__all__ = ["PREFIX", "WmmaSpec", "fragment_registers", "is_wmma_qualifier", "load_cases",
           "parse_wmma", "store_cases", "supported_wmma_qualifiers"]
