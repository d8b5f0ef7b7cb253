"""``python -m lancespec`` is the ``lancespec`` command (a Ctrl-C while it loads: one line, exit 130)."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:
    sys.stderr.write("lancespec: interrupted\n")
    sys.exit(130)

sys.exit(main())
