"""Paths inside every sandbox, named once for every layer (tasks, sandboxes, grader). Standard library only:
the engine bootstrap imports it through harness.sandbox.interface before any virtualenv exists."""

TESTBED = "/testbed"  # the task's repository, where the agent works and the grader's states are built
# The grader's own paths in a graded state (harness.grader.states, harness.grader.isolation); a provider whose
# states share the host's one file system (harness.sandbox.unsandboxed) points each at the state in hand.
HIDDEN_DIR = "/hidden_tests"  # the hidden tests, copied in once the state is built
SOLUTION_DIR = "/solution"  # a Harbor task's reference solution
RUNS_DIR = "/var/lib/optrunner-runs"  # root's; one folder per fenced test run inside, removed after it
WARM_DIR = "/var/lib/optrunner-warm"  # root's: the compiler caches a state's warm-up run left
PATCH_PATH = "/tmp/.optrunner.patch"  # the patch being applied (removed once it is)
