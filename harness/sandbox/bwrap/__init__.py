"""The bubblewrap sandbox provider (harness.sandbox.bwrap.provider)."""
