"""`python -m lwsconf`: the `lwsconf` command, also where only the interpreter is known (a subprocess)."""

import sys

from lwsconf.cli import main

sys.exit(main())
