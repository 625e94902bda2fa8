"""Template vector stores: one vector per description and per nl_example, searched by template."""

from .base import StoreHit, TemplateStore
from .factory import StoreSettings, build_store

__all__ = ["StoreHit", "StoreSettings", "TemplateStore", "build_store"]
