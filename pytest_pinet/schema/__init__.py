"""Declared schemas for the user's files, and the one place that turns a bad value into a clear line.

Each user file (the lab env's ``pinet:`` section, the image catalogue, thresholds, profiles) is
described once as attrs classes next to its loader (``*_schema.py``); ``checks`` holds the value
checks those classes name (``Annotated[int, Integer(68, 65535)]``) and ``convert`` reads decoded
YAML into them with cattrs, turning the first problem into a ``ConfigError`` that names the file,
the key path and what to do.  Nothing here imports pytest; ``convert`` (cattrs) is imported only
when a file is read, so a pytest run that never loads one does not pay for it.
"""
