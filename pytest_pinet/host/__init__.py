"""One host over SSH: the connection, the shell text sent to it, what it reports (facts, qdisc
statistics) and what is set on it (tunables, profiles, the routed path, the scratch disk), with
every operating-system difference behind ``host.platform``.

``host`` knows nothing of a lab: which hosts exist, how they are powered, reserved and flashed
is ``lab``'s business, and ``lab`` builds on ``host``, never the other way round.
"""
