"""Tests `pinet bench` runs through the plugin itself, so its figures include everything a real test pays."""
