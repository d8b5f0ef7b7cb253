"""Blob v2 (the Blob v2 post "Lance Blob V2"; docs/lance-format.md §14), one module per job: ``columns`` (which
columns are blob columns), ``routing`` (the storage kind, sidecar or base each blob gets), ``write`` (validate,
write sidecars, prepare the column for the file writer), ``read`` (descriptors, then the bytes). The data-file
surgery the reader needs is the codec's (``codec.partial``); the blob errors are in ``reference.errors``."""
