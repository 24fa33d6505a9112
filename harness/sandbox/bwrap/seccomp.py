"""The seccomp filter every command in a bubblewrap sandbox runs under, loaded by the entry helper
(enter.c / enter.py) from the file `hardening` writes once.

What Docker's default profile refuses that needs no capability, and so survives the bounding set the
sandbox's root keeps (everything else there already needs a capability it lacks):
- the kernel keyring (`add_key`, `request_key`, `keyctl`): not namespaced, so a key would outlive every
  fenced process and reach other sandboxes of the same host ids;
- new user namespaces (`unshare`, and `clone` with CLONE_NEWUSER; `clone3`, whose flags a classic filter
  cannot read, answers ENOSYS so the C library falls back to `clone`): inside one, a process regains
  every capability over namespaces of its own, which is kernel surface a timed test never needs;
- `setns`, `mount`, `umount2`, `pivot_root`, `userfaultfd`, `perf_event_open`, `bpf`.
Each refused call fails with EPERM (ENOSYS for clone3), as under Docker. A call of an architecture the
filter does not know is refused too. An x86_64 machine also runs i386 code (`int 0x80`) and the x32 ABI
(numbers with bit 30 set): both are covered.
"""
from __future__ import annotations

import struct

EPERM, ENOSYS = 1, 38
CLONE_NEWUSER = 0x10000000
AUDIT_ARCH = {"x86_64": 0xC000003E, "i386": 0x40000003, "aarch64": 0xC00000B7}
# Per architecture: (refused calls, clone's number, clone3's number). Refused, in this order: add_key,
# request_key, keyctl, unshare, setns, mount, umount2, pivot_root, userfaultfd, perf_event_open, bpf.
_X86_64 = (248, 249, 250, 272, 308, 165, 166, 155, 323, 298, 321)
CALLS = {
    "x86_64": (_X86_64 + tuple(0x40000000 | n for n in _X86_64), (56, 0x40000000 | 56), (435, 0x40000000 | 435)),
    "i386": ((286, 287, 288, 310, 346, 21, 52, 217, 374, 336, 357), (120,), (435,)),
    "aarch64": ((217, 218, 219, 97, 268, 40, 39, 41, 282, 241, 280), (220,), (435,)),
}
MACHINE_ARCHES = {"x86_64": ("x86_64", "i386"), "aarch64": ("aarch64",)}
_LD_W_ABS, _JEQ_K, _JSET_K, _RET_K = 0x20, 0x15, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args[0]'s low word: little-endian)


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(machine: str) -> bytes:
    """The classic-BPF program for `machine` (os.uname().machine)."""
    out = [_insn(_LD_W_ABS, 0, 0, _ARCH)]
    for arch in MACHINE_ARCHES.get(machine, ()):
        refused, clones, clone3s = CALLS[arch]
        block = [_insn(_LD_W_ABS, 0, 0, _NR)]
        for number in refused:  # (each check followed by its own answer: no jump targets to count)
            block += [_insn(_JEQ_K, 0, 1, number), _insn(_RET_K, 0, 0, _ERRNO | EPERM)]
        for number in clone3s:
            block += [_insn(_JEQ_K, 0, 1, number), _insn(_RET_K, 0, 0, _ERRNO | ENOSYS)]
        for number in clones:  # clone: its flags decide (the last check: A is the flags afterwards)
            block += [_insn(_JEQ_K, 0, 4, number), _insn(_LD_W_ABS, 0, 0, _ARG0),
                      _insn(_JSET_K, 0, 1, CLONE_NEWUSER), _insn(_RET_K, 0, 0, _ERRNO | EPERM),
                      _insn(_RET_K, 0, 0, _ALLOW)]
        block.append(_insn(_RET_K, 0, 0, _ALLOW))
        out.append(_insn(_JEQ_K, 0, len(block), AUDIT_ARCH[arch]))
        out += block
    out.append(_insn(_RET_K, 0, 0, _ERRNO | EPERM))  # an architecture we do not know
    return b"".join(out)
