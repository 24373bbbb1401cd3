"""The learner: owns the model, learns from its flow's source, publishes weights."""
