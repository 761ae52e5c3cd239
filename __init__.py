"""oz0-edge: ask AI agents and tools from chat and read their structured results as safe cards.

`oz0.adapters` (requests in) -> `oz0.edge` (contracts, cards, runtime) -> `oz0.renderers` (cards out).
Importing this package loads nothing else.
"""

__version__ = "0.2.0"
