"""Reports people look at: the lineage diagram (``lineage``, ``gather``, ``dot``) and self-contained HTML pages
(``html``, ``certify_page``, ``writer_page``), built only from the JSON documents the other reports are made of
(docs/reports.md)."""
