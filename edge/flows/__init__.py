"""Flows: agents composed in a plugin's `flows/NAME.yaml`, run in order as child jobs of one job."""
