"""`python -m cli ...` runs the `kafka-wire` command line (what tests and tools start as a subprocess)."""

import sys

from cli.main import main

sys.exit(main())
