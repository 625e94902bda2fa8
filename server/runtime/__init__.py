"""The live set of adapters built from one loaded config, and the holder that swaps sets on reload."""

from .build import Runtime, build_runtime

__all__ = ["Runtime", "build_runtime"]
