"""Python modules generated from protos/ by ``python -m lancespec.protogen``. Do not edit by hand."""
