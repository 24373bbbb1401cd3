"""The backends: the same roles in one process or as Ray actors, behind one ``Runtime``."""
