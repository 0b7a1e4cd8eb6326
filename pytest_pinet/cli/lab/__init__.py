"""``pinet lab ...``: one module per subcommand (``up``, ``down``, ``status``, ``export``,
``power``, ``check``, ``degrade``), with the options they share in ``options``."""
