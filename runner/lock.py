"""One process at a time per run directory: `run`, `grade` and `judge` hold its lock; `view` reads freely.

Two runners on one directory would both run every unfinished rollout (each under its own cost cap), and a
regrade of a live run would rewrite results.jsonl from a list that misses what the run appends meanwhile.
The lock is an advisory `flock` on `<run>/.lock`, so the kernel drops it when its process ends in any way
(a SIGKILL, a crash, a reboot): a stale lock is simply taken over. The file names the holder (pid, host,
command, since when) for the one-line refusal a second process gets. On a shared file system the lock is
as good as its `flock` (NFSv4 and Lustre forward it; a file system that does not gets no protection).
"""
from __future__ import annotations

import fcntl
import os
import socket
import stat
import time
from pathlib import Path
from types import TracebackType

from runner.config import ConfigError
from runner.store import LOCK_NAME


class RunDirBusy(ConfigError):
    """Another process holds the run directory; the message names it."""


class RunLock:
    """`with RunLock(run_dir, "run"):` holds the directory (made if missing) or raises RunDirBusy."""

    def __init__(self, root: Path, command: str) -> None:
        self.root, self.command = Path(root), command
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        return self.root / LOCK_NAME

    def acquire(self) -> None:
        """Hold the directory (no-op when this object holds it already) or raise RunDirBusy."""
        if self._fd is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        # Never through a link: a copied run directory whose .lock links (or is hard-linked) to another
        # file would have that file emptied and rewritten below.
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise ConfigError(f"{self.path} cannot be the run's lock file ({exc.strerror}); remove it, "
                              "then run this again") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            raise ConfigError(f"{self.path} is not a plain file of its own (a link, a device or a pipe); remove "
                              "it, then run this again")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise RunDirBusy(f"{self.root} is in use by {holder}; wait for it to end or stop it, "
                             "then run this again") from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} (optrunner {self.command}, since {stamp})\n"
                  .encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # (closing drops the flock; the file stays, naming the last holder)

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()
