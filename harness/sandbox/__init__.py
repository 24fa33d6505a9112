"""The sandbox side of the harness: where commands run.

interface.py  the protocol, results, limits, output capture and errors every caller sees
providers.py  providers by name (`docker`), started from task images
processes.py  fresh processes over one launcher loop (mini_swe's commands, the grader's test runs)
docker/       the Docker provider: engine bootstrap, images, containers, streams

Standard library only at this level, so `python3 -m harness.sandbox.docker.engine` runs before any
virtualenv exists.
"""
