"""The ``pinet`` command: each subcommand in a module of its own, registered by ``main``."""
