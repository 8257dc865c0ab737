"""The one place tcsim's version is written: pyproject.toml reads it (dynamic version), and
`tcsim.__version__` is this string, installed or run from the source tree."""

__version__ = "0.3.0"
