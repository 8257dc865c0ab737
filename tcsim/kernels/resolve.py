"""A kernel named by a spec: ``path/to/file.py:NAME`` or ``package.module:NAME``.

What the command line (and `tcsim.kernels.kernel_named`) accept besides a built-in name, so a
user's `Kernel` goes wherever the ladder's does. A file is loaded as Python runs a script (its
directory on ``sys.path`` while it loads, so it may import its neighbours); a module is
imported, with the current directory searched after everything else (as ``python -m`` would
find it). Every way a spec can fail is a ValueError that names the spec and what is wrong.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from ..isa.validate import did_you_mean
from .kernel import Kernel


def is_spec(name: str) -> bool:
    """A ``where:NAME`` spec, not a built-in name."""
    return ":" in name


def resolve(spec: str) -> Kernel:
    """The `Kernel` named by ``spec`` (``path/to/file.py:NAME`` or ``package.module:NAME``)."""
    where, _, attribute = spec.rpartition(":")
    if not where or not attribute.isidentifier():
        raise ValueError(f"kernel {spec!r}: a kernel of your own is named FILE.py:NAME or "
                         f"package.module:NAME, NAME a Python name (the Kernel's variable)")
    module = _load_file(spec, where) if _is_path(where) else _import(spec, where)
    if not hasattr(module, attribute):
        kernels = sorted(k for k, v in vars(module).items() if isinstance(v, Kernel))
        raise ValueError(f"kernel {spec!r}: {where} has no {attribute!r}"
                         f"{did_you_mean(attribute, kernels)}; its Kernels: "
                         f"{', '.join(kernels) or 'none'}")
    kernel = getattr(module, attribute)
    if not isinstance(kernel, Kernel):
        kind = type(kernel).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise ValueError(f"kernel {spec!r}: {attribute} is {article} {kind}, not a "
                         f"tcsim.Kernel (docs/own-kernel.md shows how to make one)")
    return kernel


def _is_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where


def _load_file(spec: str, where: str) -> ModuleType:
    path = Path(where).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"kernel {spec!r}: no file {where}"
                         + (" (it is a directory)" if path.is_dir() else ""))
    name = f"tcsim_user_{abs(hash(str(path)))}_{path.stem}"
    if name in sys.modules:  # loaded once: a second look-up gives the same Kernel objects
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"kernel {spec!r}: {where} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    sys.path.insert(0, str(path.parent))
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[name]
        if not isinstance(exc, Exception):
            raise
        raise ValueError(f"kernel {spec!r}: running {where} raised "
                         f"{type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(str(path.parent))
    return module


def _import(spec: str, where: str) -> ModuleType:
    added = os.getcwd() not in sys.path and "" not in sys.path
    if added:
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name and where.startswith(exc.name):  # the module itself, or a package above
            raise ValueError(f"kernel {spec!r}: no module named {exc.name!r} (looked in "
                             f"sys.path and the current directory)") from exc
        raise ValueError(f"kernel {spec!r}: importing {where} raised "
                         f"ModuleNotFoundError: {exc}") from exc
    except Exception as exc:
        raise ValueError(f"kernel {spec!r}: importing {where} raised "
                         f"{type(exc).__name__}: {exc}") from exc
    finally:
        if added:
            sys.path.remove(os.getcwd())
