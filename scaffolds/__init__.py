"""Agent scaffolds (CodeAct, mini-swe-agent style, terminus-like) on the harness sandbox protocol.

Built in a later issue; the package exists so the distribution's layout matches design.md.
"""
