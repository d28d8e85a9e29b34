"""`python -m flametool.measure.child MSG_FD JOB_JSON`: the child's entry point (entry.main). spawn.child_command
runs it with `-c` instead, the current directory moved to the end of sys.path first."""

import sys

from .entry import main

sys.exit(main(sys.argv[1:]))
