"""Ways in: the `oz0` command line, the console and the chat channels. Adapters translate requests
to the edge and post rendered payloads back; they never build markup."""
