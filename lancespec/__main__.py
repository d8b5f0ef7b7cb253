"""``python -m lancespec`` is the ``lancespec`` command."""

import sys

from .cli import main

sys.exit(main())
