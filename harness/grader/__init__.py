"""The grader: a patch timed against the base code and the expert's change, judged with GSO's verdicts.

config.py       GradeConfig (rounds, timing mode, statistic, p): the `grading` config schema too
states.py       a code state in a fresh sandbox: patch cascade, rebuild, hidden tests, one test run
perfkit.py      the GSO test protocol helper copied next to the hidden tests (runs in the container)
gpukit.py       its GPU timer (CUDA events, warm-ups, L2 flush, median; fresh inputs and a checked output per rep)
timing.py       a session's schedule of runs, per-test estimates, bootstrap intervals
grade.py        grade_patches(): a task's patches -> one report each (GSO's keys, statuses, scores,
                intervals), timed together in sessions; grade(): one patch
predictions.py  GSO predictions files
batch.py        many patches: predictions files (`harness grade`) and the suite check (`harness validate`)
isolation.py    fenced test processes (fresh HOME/TMPDIR, read-only repository), measured from outside
freeze.py       a built state frozen before the tests go in (no build process left), checked from outside
patch_paths.py  the paths each section of a patch names or writes, as git reads them
reward.py       Harbor tasks: the verifier's reward, anchors measured here (anchors.py)
guards.py       mechanical signs of a reward hack (protected paths, hooks, the clock, state left behind)
judge/          an LLM judge: hack votes and ISO-Bench's soft labels for one rollout

It depends on the sandbox side, the tasks, the metrics and (for a judge) the model layer; never on
scaffolds/ or runner/.
"""
