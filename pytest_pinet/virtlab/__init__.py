"""The virtual lab: hosts in network namespaces joined by GbE-shaped veth links.

It lets the whole suite run on any Linux machine, CI included, with real sshd, real iperf3
and real kernel networking; only the wire is emulated.
"""
