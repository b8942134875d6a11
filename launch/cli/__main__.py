"""``python -m launch.cli``: the command line, as the ``provenote`` script runs it."""

import sys

from launch.cli import app

sys.exit(app())
