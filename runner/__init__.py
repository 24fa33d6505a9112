"""The rollout orchestrator: plans tasks x rollouts, runs them under limits, hands diffs to the grader.

Built in a later issue; the package exists so the distribution's layout matches design.md.
"""
