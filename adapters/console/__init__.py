"""The local web console and the runtime API beside it."""
