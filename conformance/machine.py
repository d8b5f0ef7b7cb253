"""``python -m conformance.machine``: the writer machine's command (``properties.command``)."""

import sys

from conformance.properties.command import main

if __name__ == "__main__":
    sys.exit(main())
