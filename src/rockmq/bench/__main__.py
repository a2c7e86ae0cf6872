"""`python -m rockmq.bench`: the same as `rockmq bench`."""

import sys

from rockmq.bench.cli import main

sys.exit(main())
