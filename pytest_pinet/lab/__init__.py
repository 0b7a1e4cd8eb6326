"""The lab: which hosts it has (the inventory read from a labgrid env) and how they are powered,
reserved, flashed, provisioned and recovered (strategy, places, coordinator, images).

What is done on one host once it is reached lives in ``host``; ``lab`` uses it.
"""
