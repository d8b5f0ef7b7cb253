"""The reference model of the Lance table layer: a small, readable implementation that is the oracle.

Start with ``reference.api`` (a pylance-shaped writer and reader) or ``reference.table``
(read-only datasets and snapshots).
"""

__version__ = "0.1.0"
