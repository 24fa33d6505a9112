"""Paths inside every sandbox, named once for every layer (tasks, sandboxes, grader). Standard library only:
the engine bootstrap imports it through harness.sandbox.interface before any virtualenv exists."""

TESTBED = "/testbed"  # the task's repository, where the agent works and the grader's states are built
