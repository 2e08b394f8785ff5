"""Developer tools run with `python -m orbitmq.tools.<name>` (documentation generators, ...)."""
