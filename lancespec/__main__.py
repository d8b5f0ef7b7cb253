"""``python -m lancespec`` is the ``lancespec`` command (a Ctrl-C while it loads: one line, exit 130)."""

import os
import signal
import sys

try:
    from .cli import main
except KeyboardInterrupt:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second SIGINT on the way out must not turn 130 into -2
    sys.stderr.write("lancespec: interrupted\n")
    sys.stderr.flush()
    os._exit(130)  # as cli.main.exit_now, which may not have loaded

sys.exit(main())
