"""`import tcsim` is enough for everything the README shows, and stays light.

Each check runs in a fresh interpreter, so what the rest of the suite imported does not count.
"""

import subprocess
import sys
import textwrap

import pytest

SUBPACKAGES = ("hw", "isa", "kernels", "memory")


def _python(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()


def test_import_tcsim_does_not_import_cupy_or_the_gpu_side():
    out = _python("""
        import sys
        import tcsim
        print(sorted(m for m in sys.modules if m == "cupy" or m.startswith(("cupy.", "tcsim.hw"))))
    """)
    assert out == "[]"


def test_import_tcsim_hw_does_not_import_cupy():
    out = _python("""
        import sys
        import tcsim.hw
        print("cupy" in sys.modules)
    """)
    assert out == "False"


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackages_resolve_after_a_plain_import(name):
    out = _python(f"""
        import tcsim
        module = tcsim.{name}
        print(module.__name__, module is __import__("sys").modules["tcsim.{name}"])
    """)
    assert out == f"tcsim.{name} True"


def test_readme_hw_names_resolve_after_a_plain_import():
    out = _python("""
        import tcsim
        hw = tcsim.hw
        print(all(callable(f) for f in (hw.mma, hw.mma_regs, hw.run, hw.profile,
                                        hw.available, hw.unavailable_reason)))
        print(callable(tcsim.memory.access), callable(tcsim.memory.visualize_layout))
    """)
    assert out == "True\nTrue True"


def test_a_model_imported_alone_draws_itself_and_matplotlib_waits():
    # the views hang the display hooks on the models; importing any model runs tcsim/__init__
    out = _python("""
        import sys
        from tcsim.isa.fragments import mma_fragment
        from tcsim.memory.access import access
        acc = access("ld.shared.b32", [128 * lane for lane in range(32)])  # all in bank 0
        print(acc.heatmap().splitlines()[2].split())
        print(acc._repr_html_().count("#e34a33"),
              mma_fragment("m16n8k8.row.col.f32.f16.f16.f32", "c")._repr_html_().count("<td"))
        print("matplotlib" in sys.modules)
    """)
    assert out.splitlines() == [str(["0", "32"] + ["."] * 31 + ["32"]), "1 128", "False"]


def test_hw_without_a_gpu_says_why():
    out = _python("""
        import numpy as np
        import tcsim
        if tcsim.hw.available():
            print("gpu")
        else:
            A = np.ones((2, 16, 8), np.float16)
            B = np.ones((2, 8, 8), np.float16)
            C = np.zeros((2, 16, 8), np.float32)
            try:
                tcsim.hw.mma("m16n8k8.row.col.f32.f16.f16.f32", A, B, C)
            except tcsim.hw.HardwareUnavailable as error:
                print(tcsim.hw.unavailable_reason() in str(error), str(error))
    """)
    if out == "gpu":
        pytest.skip("a GPU is usable here: nothing to refuse")
    assert out.startswith("True tcsim.hw needs an NVIDIA GPU"), out


def test_dir_lists_the_subpackages():
    out = _python("""
        import tcsim
        print(" ".join(dir(tcsim)))
    """)
    names = set(out.split())
    assert set(SUBPACKAGES) <= names
    assert {"mma", "fragment", "trace", "run", "__version__"} <= names


def test_an_unknown_attribute_is_still_an_attribute_error():
    out = _python("""
        import tcsim
        try:
            tcsim.no_such_thing
        except AttributeError as error:
            print(error)
        print(hasattr(tcsim, "hw"), hasattr(tcsim, "nope"))
    """)
    assert out == "module 'tcsim' has no attribute 'no_such_thing'\nTrue False"


def test_version_is_a_release_number():
    import re

    import tcsim

    assert re.fullmatch(r"\d+\.\d+\.\d+", tcsim.__version__)
