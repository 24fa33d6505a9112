"""The Docker provider. Its modules import docker-py; this package file does not (the engine bootstrap
runs on the bare system Python)."""
