"""Verdicts: what a measurement should have been (line-rate physics, thresholds)."""
