"""The opt-in unsandboxed provider: graded states as plain processes of this host, for machines where no
sandbox can start (a GPU pod under gVisor or another runtime that refuses user namespaces and overlays).

Nothing here isolates anything: no namespace, no cgroup, no network cut, no device cut. What it keeps of the
grader's rules is what plain processes allow, and it says so everywhere (reports name the provider and its
engine line, "none: plain processes of this host"; agent rollouts refuse it unless a second setting allows
them; the conformance suite lists the cases it cannot meet). Run by root only:
- each state is a folder of its own (state.py) with its repository, tests, runs and caches, and the fixed
  paths the grader and the tasks' tests use (/testbed, /hidden_tests, /var/lib/optrunner-runs, ...) are
  symbolic links that one host-wide lock points at the state in hand for each command: commands of all
  states run one at a time;
- each state has two users of its own, ids no account has: its builder (the agent's and the build's
  commands, start-up hook listing: a login shell) and its fenced user (every test run, through the grader's
  fence, harness.grader.isolation, which over such a sandbox lists only the host's shared folders and
  changes nothing outside the state's files). The grader's own commands (no login shell) run as root;
- no process of a command outlives it (its group and its builder's processes are killed after it).
Folder tasks only (their repository and install commands: GPU and CPU suite tasks); GSO rows and Harbor
tasks need an image, refused in one line.
"""
