"""`installed/<agent>`: real agent CLIs from their registries, run inside the rollout's sandbox (agent.py),
their model calls answered through the run's gateway (harness.models.gateway). specs.py lists them."""
