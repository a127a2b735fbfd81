"""`python -m ud_assets.cli`: the `ud` command without its console script."""

import sys

from ud_assets.cli import main

sys.exit(main())
