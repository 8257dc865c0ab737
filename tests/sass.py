"""SASS of a CUDA source of tcsim.hw (hand-written or generated) as ptxas emits it (nvcc and
cuobjdump from the CUDA toolkit): the instructions of each kernel, in order. Raises `ToolkitMissing`
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
def kernel_sass(source: str, arch: str = "sm_90", defines: tuple[tuple[str, int], ...] = ()
                ) -> dict[str, tuple[tuple[int, str], ...]]:
    """{kernel name: its SASS instructions as (address, text without the trailing ';')} of
    ``source`` compiled with ``defines`` (-D name=value)."""
    for tool in ("nvcc", "cuobjdump"):
        if shutil.which(tool) is None:
            raise ToolkitMissing(f"{tool} not found: reading SASS needs the CUDA toolkit")
    from tcsim.hw import runtime

    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "out.cubin"
        subprocess.run(["nvcc", f"-arch={arch}", "-cubin",
                        *(f"-I{d}" for d in runtime.include_dirs()),
                        *(f"-D{k}={v}" for k, v in defines), "-o", str(cubin),
                        str(runtime.source_path(source))], check=True)
        text = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True,
                              capture_output=True, text=True).stdout
    out = {}
    for body in re.split(r"\n\s*Function : ", text)[1:]:
        lines = re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", body)
        out[body.split("\n")[0].strip()] = tuple((int(a, 16), t.strip()) for a, t in lines)
    return out


def opcode(text: str) -> str:
    """An instruction's opcode with its modifiers, without its predicate."""
    return re.match(r"(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", text).group(1)


@cache
def kernel_opcodes(source: str, arch: str = "sm_90") -> dict[str, tuple[str, ...]]:
    """{kernel name: its SASS opcodes (with modifiers, without predicates)} of ``source``."""
    return {name: tuple(opcode(t) for _, t in body)
            for name, body in kernel_sass(source, arch).items()}
