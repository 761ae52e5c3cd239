"""The runtime: jobs, agent kinds, the journal and store, and who may ask what."""
