"""The evaluator: plays greedy episodes with a checkpoint's weights, beside learning."""
