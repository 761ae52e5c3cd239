"""`python -m oz0.adapters.cli`: the same entry point as the `oz0` script."""

import sys

from oz0.adapters.cli import main

sys.exit(main())
