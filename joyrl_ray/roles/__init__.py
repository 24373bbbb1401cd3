"""The roles that do the work: the worker, the learner, the evaluator (one folder each)."""
