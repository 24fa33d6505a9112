"""What a task image holds, whichever provider makes it: the recipe both sandbox providers share.

Docker builds it as images (harness/sandbox/docker/), bubblewrap as directories or as layers over the
host (harness/sandbox/bwrap/); neither imports the other, and both read this package:
- contents.py: the image's environment, its task virtualenv, the repository at /testbed and the tag
  that names the image by a hash of its inputs; the history cut of the agent's image;
- history.py: a task's repository history (a GSO row), packed for the build;
- workspace.py: a Harbor task's working directory snapshot and its pinned files;
- dockerfile.py: a Dockerfile read as instructions (one reader for both providers).
No engine here: the standard library, git on the host and the task's record only.
"""
