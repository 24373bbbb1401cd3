"""The control plane: the coordinator, which knows no data, and what only it uses."""
