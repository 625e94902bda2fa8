"""The HTTP API's wire shapes: request and response models, and the one status vocabulary.

A leaf package (pydantic only): the service builds these, the web layer serialises them, the routing
log and the statistics read the same status words, and the OpenAPI document is generated from them.
"""
