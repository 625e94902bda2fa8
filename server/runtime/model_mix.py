"""Config warnings that do not stop a load: a composite comparing raw cosines of different embedding
models (intent/calibration.py puts them on one scale unless `score_calibration: off`)."""

from __future__ import annotations

from ..adapters.base import DataAdapterSettings
from .loader import LoadedConfig


def model_of(settings: DataAdapterSettings, config: LoadedConfig) -> str:
    embedding = settings.embedding or config.app.embedding
    where = f"@{embedding.base_url}" if embedding.base_url else ""
    if embedding.model_path is not None:
        return f"{embedding.provider}:{embedding.model_path}"
    return f"{embedding.provider}:{embedding.model}{where}"


def mixed_model_warnings(config: LoadedConfig) -> list[str]:
    out = []
    for adapter in config.adapters:
        children = getattr(adapter, "child_adapters", None)
        if children is None or getattr(adapter, "score_calibration", "auto") != "off":
            continue
        models: dict[str, list[str]] = {}
        for name in children:
            child = config.adapter(name)
            if isinstance(child, DataAdapterSettings):
                models.setdefault(model_of(child, config), []).append(name)
        if len(models) > 1:
            mix = "; ".join(f"{m} ({', '.join(names)})" for m, names in models.items())
            out.append(
                f"composite {adapter.name}: children use different embedding models ({mix}) and"
                " score_calibration is off: their raw cosines are compared as if on one scale"
            )
    return out
