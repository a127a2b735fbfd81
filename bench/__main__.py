"""`python -m bench [--corpus DIR] [--out FILE] [--repeat N] ...` from the repository root (see bench.run)."""

import sys

from bench.run import main

sys.exit(main())
