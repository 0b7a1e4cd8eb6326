"""One run of the suite, without pytest: its settings, results, store and place.

The pytest layer keeps one :class:`~pytest_pinet.session.pinet_run.PinetRun` per process; the
``pinet`` command can build one too.  It sits above the rooms: it may use any of them, and
none of them uses it.
"""
