"""The worker: steps envs with an acting policy and sends what it collects through its flow."""
