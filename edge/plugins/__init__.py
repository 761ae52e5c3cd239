"""Plugins as declared on disk: manifests, lint and the scaffold of a new plugin."""
