"""The control plane: one small actor that knows the run's state and no data."""
