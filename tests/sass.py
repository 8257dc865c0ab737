"""SASS of a CUDA source of tcsim.hw (hand-written or generated) as ptxas emits it (nvcc and
cuobjdump from the CUDA toolkit): the opcodes of each kernel, in order. Raises `ToolkitMissing`
where the toolkit is absent."""

import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path


class ToolkitMissing(RuntimeError):
    pass


@cache
def kernel_opcodes(source: str, arch: str = "sm_90") -> dict[str, tuple[str, ...]]:
    """{kernel name: its SASS opcodes (with modifiers, without predicates)} of ``source``."""
    for tool in ("nvcc", "cuobjdump"):
        if shutil.which(tool) is None:
            raise ToolkitMissing(f"{tool} not found: reading SASS needs the CUDA toolkit")
    from tcsim.hw import runtime

    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "out.cubin"
        subprocess.run(["nvcc", f"-arch={arch}", "-cubin",
                        *(f"-I{d}" for d in runtime.include_dirs()), "-o", str(cubin),
                        str(runtime.source_path(source))], check=True)
        text = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True,
                              capture_output=True, text=True).stdout
    out = {}
    for body in re.split(r"\n\s*Function : ", text)[1:]:
        ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", body)
        out[body.split("\n")[0].strip()] = tuple(ops)
    return out
