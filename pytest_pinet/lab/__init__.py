"""Lab access: the inventory read from a labgrid env, hosts reached through fabric."""
