"""Traffic scenarios beyond one link: routing through the board."""
