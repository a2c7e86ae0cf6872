"""`python -m rockmq` is the `rockmq` command."""

import sys

from rockmq.cli import main

sys.exit(main())
