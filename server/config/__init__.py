"""Configuration: YAML with line numbers, environment substitution, pydantic models, one loader."""
