"""simkit: GPU-accelerated scientific simulation engines for Python.

Engines (each with the backends ``reference``, ``cpu`` and ``cuda``; ``backend="auto"`` uses a GPU
when there is one):

- :mod:`simkit.prolif` -- cell proliferation and dye dilution (the ProCell model), fitting;
- :mod:`simkit.angio` -- tumour-induced angiogenesis (Anderson & Chaplain);
- :mod:`simkit.ddm` -- HLA Data Distribution Management matching.

Bad input raises ``ValueError`` with simkit's one-line message; Ctrl-C stops a running engine and
raises ``KeyboardInterrupt``. See docs/python.md.
"""
from . import _simkit
from . import angio, ddm, prolif

__version__ = _simkit.build_info()["version"]


def info():
    """What this build has (version, compiler, CUDA backends) and whether a GPU is usable now."""
    b = dict(_simkit.build_info())
    b["cuda"] = dict(_simkit.cuda_status())
    return b


__all__ = ["angio", "ddm", "prolif", "info", "__version__"]
