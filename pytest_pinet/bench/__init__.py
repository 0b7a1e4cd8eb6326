"""``pinet bench``: what the lab and the tool measure about themselves (fidelity of the emulated
cables against the model, sensitivity of the verdicts, the cost of each suite)."""
