"""Adapters: one per data source, plus the composite that routes across them."""

from .base import Adapter, AdapterContext, AdapterSettings, DataAdapter, DataAdapterSettings, QueryResult

__all__ = ["Adapter", "AdapterContext", "AdapterSettings", "DataAdapter", "DataAdapterSettings", "QueryResult"]
