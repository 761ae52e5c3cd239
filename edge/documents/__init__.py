"""The agent-level contract documents: OpenAPI, the upgrade check, the contract diff, the contract hash, the summary."""
