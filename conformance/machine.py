"""``python -m lancespec.conformance.machine``: the writer machine's command (``properties.command``)."""

import sys

from lancespec.conformance.properties.command import main

if __name__ == "__main__":
    sys.exit(main())
