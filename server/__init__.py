"""Intent Router: configuration-driven routing of questions to query templates over many data sources."""
