"""``python -m harness`` runs the ``stopbench`` command."""

import sys

from harness.cli import main

sys.exit(main())
