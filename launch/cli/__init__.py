"""The ``provenote`` command line, one module per group of commands (``common`` holds what they
share). Importing this package registers every command on ``app``.

It starts fast: ``--help`` and ``evidence`` import neither torch, transformers, Litestar nor nltk;
the commands that need them import them when they run.
"""

from launch.cli import drafting, operations, running
from launch.cli.common import DEFAULT_SAMPLE, app, main

__all__ = ["DEFAULT_SAMPLE", "app", "drafting", "main", "operations", "running"]
