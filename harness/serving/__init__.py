"""Service tasks: a server built from a code state, driven by the grader's own client, scored by serving metrics.

workload.py  the seeded request set (prompt and output lengths, arrival profile): one seed for the agent,
             others, never shown to it, for grading
client.py    the grader's asyncio streaming client: sends a workload to a server over sockets the caller
             opens (into a sandbox's network namespace) and records every request's timeline
metrics.py   TTFT, TPOT, ITL, end-to-end latency percentiles and throughputs from those records (pure)

Nothing here imports the grader or a sandbox provider: the grader hands the client a way to open a socket.
"""
