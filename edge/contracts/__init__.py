"""Contracts: JSON Schemas loaded and checked once, their summaries, OpenAPI documents and the upgrade check."""
