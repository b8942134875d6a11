"""Entry points: the ``provenote`` command line (and later the sandbox EHR)."""
