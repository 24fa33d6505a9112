"""The GPU timing protocol for the hidden tests of GPU tasks, beside perfkit (copied next to them too).

A GPU test imports torch and this module before the code under test, and ends as a CPU one does:
    TOLERANCE = {"rtol": 1e-4, "atol": 1e-6}   # optional: how far a result may stray (reordered sums)
    def setup(): ...                            # once, untimed: the workload (inputs, a model)
    def inputs(data, seed): ...                 # optional: the data of one rep (default: perturb)
    def experiment(data): ...                   # what is timed
    def run_test(eqcheck=False, reference=False, prefix=""):
        return gpukit.time_experiment(globals(), eqcheck, reference, prefix)
    if __name__ == "__main__":
        gpukit.main(run_test)
and writes the same "Execution time: <seconds>s" line, then "Timed calls: <n>": how many calls of experiment() the
process made (warm-ups and reps), which the grader weighs against the GPU's busy time and the process's wall time
seen from outside (grader.guards: a clock that stops seeing work).

What it times: after `warmups` calls on setup()'s data (the first call of a kernel is ~75x a warm one:
compilation, caches, lazy CUDA start), `reps` calls of experiment(), each between CUDA events, the L2 cache
flushed before each (a kernel must not look fast on data an earlier rep left in cache), and the whole device
synchronized before the end event, so work left on a side stream is counted. The figure is the median of the reps,
in seconds.

No rep can reuse another's work. Each rep gets inputs of its own, made before its start event: the test's
`inputs(data, seed)`, or `perturb(data, seed)`, setup()'s floating-point tensors scaled elementwise by seeded
noise (data with none, such as token ids, needs `inputs`: the run fails otherwise). After its end event its output
is fingerprinted: its norm and its projections on PROJECTIONS dense random vectors (float64), which nothing gets
right without the whole output. The `--reference` run stores its reps' fingerprints and the seed it drew
(`<prefix>_reps.json`); every later run, timed or checked, takes that seed (the same inputs) and compares each
rep's fingerprint with the stored one, allowing what TOLERANCE allows element by element (`compare`): a mismatch
fails the run with an AssertionError, as a failed equivalence check does. The last rep's result is stored as a
summary (`summary`: each tensor's shape and a seeded sample of its values) and compared element by element as in
GSO's protocol. experiment() returns plain tensors, numbers, strings, None, or lists, tuples and dicts of them.

Its timer is torch's own, taken at its import, before code under test can run: a run fails (TimerReplaced) when
torch is not where packages are installed, when a folder outside the installation (a shim on PYTHONPATH, the work
dir) provides a module imported before this one, when `torch.cuda.Event`, its `record`, `elapsed_time` or
`synchronize`, or `torch.cuda.synchronize` is not defined in torch's package, or when one of them (or the C
functions under them) changed during the run. `device="cpu"` times the same protocol with the host's clock, to
check a test script without a GPU.
"""
from __future__ import annotations

import json
import math
import os
import pickle
import secrets
import site
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

FLUSH_BYTES = 256 * 2**20  # more than any GPU's L2 cache (an H100's is 50 MB)
NOISE = 0.1  # perturb's relative change of each value: far above any tolerance, small for the workload
PROJECTIONS = 4
SPREAD = 6.0  # an honest error e moves a projection by N(0, |e|^2): 6 sigma is never reached by chance
_CHUNK = 1 << 22  # elements fingerprinted at a time (bounds the float64 copies on the GPU)
SAMPLE = 1 << 16  # values of each output tensor the reference keeps for the element-wise check (summary)
_calls = 0  # calls of experiment() by this process (what main() reports)

# Everything the protocol relies on, taken now: later rebinding by the code under test changes nothing
# here, and check_timer() fails the run when it sees one.
_EVENT = torch.cuda.Event
_RECORD, _ELAPSED, _EV_SYNC = _EVENT.record, _EVENT.elapsed_time, _EVENT.synchronize
_SYNC, _PERF = torch.cuda.synchronize, time.perf_counter
_UNDER = tuple((owner, name, getattr(owner, name)) for owner, names in (
    (torch._C, ("_cuda_synchronize",)), (_EVENT.__mro__[1], ("record", "elapsed_time", "synchronize")))
    for name in names if hasattr(owner, name))  # what torch's Python wrappers call
_TO, _RESHAPE, _TOLIST = torch.Tensor.to, torch.Tensor.reshape, torch.Tensor.tolist
_NARROW, _MATMUL, _DOT, _RANDN, _INDEX = torch.narrow, torch.matmul, torch.dot, torch.randn, torch.index_select
_ISFINITE, _NAN_TO_NUM, _AS_REAL = torch.isfinite, torch.nan_to_num, torch.view_as_real
_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__))


class TimerReplaced(RuntimeError):
    """The code under test replaced the timer this protocol measures with, or ran before it was taken."""


def _installed_roots() -> tuple[str, ...]:
    """Where Python and its packages are installed (the standard library, site-packages)."""
    paths = sysconfig.get_paths()
    roots = {paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= set(getattr(site, "getsitepackages", list)()) | {site.getusersitepackages()}
    return tuple(os.path.realpath(r) for r in roots if r)


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _start_path() -> list[str]:
    """The folders on sys.path, and those of the PYTHONPATH the process started with (read from /proc:
    code that ran before this module may have edited os.environ and sys.path)."""
    start = os.environ.get("PYTHONPATH", "")
    try:
        with open("/proc/self/environ", "rb") as fh:
            start = next((item[11:].decode(errors="replace") for item in fh.read().split(b"\0")
                          if item.startswith(b"PYTHONPATH=")), "")
    except OSError:
        pass
    return [p or os.getcwd() for p in (*sys.path, *start.split(os.pathsep)) if isinstance(p, str)]


def shadowing(names: set[str], folders: list[str], roots: tuple[str, ...]) -> list[str]:
    """'name (path)' for each module of `names` that a folder outside `roots` provides (a module file, byte code,
    an extension or a package): code of the work dir that could have been imported instead of the installed one."""
    found = []
    for folder in dict.fromkeys(os.path.realpath(f) for f in folders):
        if _under(folder, roots) or not os.path.isdir(folder):
            continue
        for entry in sorted(os.listdir(folder)):
            path = os.path.join(folder, entry)
            package = os.path.isdir(path) and any(os.path.exists(os.path.join(path, f"__init__.{ext}"))
                                                  for ext in ("py", "pyc"))
            name = entry if package else entry.split(".")[0] if entry.endswith((".py", ".pyc", ".so", ".pyd")) else ""
            if name in names:
                found.append(f"{name} ({path})")
    return found


def _imported_names() -> set[str]:
    """Top-level names of the modules imported so far that a folder could provide (not built-in or
    frozen), other than the test script and this module."""
    names = set()
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.origin not in (None, "built-in", "frozen"):
            names.add(name.split(".")[0])
    return names - {"__main__", "__mp_main__", __name__.split(".")[0]}


# Taken at import: torch, and whatever it imported, came before any code under test could run, unless a
# folder outside the installation provides one of them (this module's own folder holds the hidden tests).
_ROOTS = _installed_roots()
_EARLY = shadowing(_imported_names(), [p for p in _start_path()
                                       if os.path.realpath(p) != os.path.dirname(os.path.realpath(__file__))],
                   _ROOTS)


def check_origin() -> None:
    """torch was imported from its installation and nothing before this module came from elsewhere."""
    if not _under(_TORCH_DIR, _ROOTS):
        raise TimerReplaced(f"torch was imported from {_TORCH_DIR}, not from where Python's packages are installed")
    if _EARLY:
        raise TimerReplaced(f"modules imported before the GPU timer was taken can come from outside the installation: "
                            f"{', '.join(_EARLY[:3])}; the timer cannot be trusted")


def _torch_module(name: str) -> Any:
    """The imported module of that name when its file is in torch's package, else None."""
    module, path = sys.modules.get(name), getattr(sys.modules.get(name), "__file__", None)
    return module if path and _under(os.path.realpath(path), (_TORCH_DIR,)) else None


def _owned(obj: Any) -> bool:
    """Defined in torch's package: a class as its module's attribute; a function by its code's file and
    its globals, which must be a module of torch's (a code object's file name can be forged, not both)."""
    if isinstance(obj, type):
        module = _torch_module(obj.__module__)
        return module is not None and getattr(module, obj.__qualname__, None) is obj
    code, scope = getattr(obj, "__code__", None), getattr(obj, "__globals__", None)
    if code is None or not isinstance(scope, dict) or not _under(os.path.realpath(code.co_filename), (_TORCH_DIR,)):
        return False
    module = _torch_module(str(scope.get("__name__")))
    return module is not None and module.__dict__ is scope


def check_timer() -> None:
    """The timer is torch's own and the one taken at import (TimerReplaced otherwise)."""
    event = torch.cuda.Event
    now = (event, getattr(event, "record", None), getattr(event, "elapsed_time", None),
           getattr(event, "synchronize", None), torch.cuda.synchronize)
    if any(a is not b for a, b in zip(now, (_EVENT, _RECORD, _ELAPSED, _EV_SYNC, _SYNC))) or \
            any(getattr(owner, name, None) is not taken for owner, name, taken in _UNDER):
        raise TimerReplaced("the GPU timer was replaced during the run (torch.cuda.Event, its record, elapsed_time "
                            "or synchronize, or torch.cuda.synchronize)")
    if not all(_owned(obj) for obj in now):
        raise TimerReplaced("the GPU timer is not torch's own (torch.cuda.Event, its record, elapsed_time or "
                            "synchronize, or torch.cuda.synchronize is defined outside torch's package)")


def rep_seed(salt: int, rep: int) -> int:
    """The seed of rep `rep` (0-based) of a run whose reference drew `salt`."""
    return (salt * 1_000_003 + rep + 1) % 2**62


def perturb(data: Any, seed: int) -> Any:
    """setup()'s data for one rep: each floating-point tensor in it (in tuples, lists and dicts, not inside
    other objects such as modules) multiplied elementwise by 1 + U(-NOISE, NOISE), seeded; the rest as is.
    Multiplying keeps zeros, signs, infinities and every value's magnitude (a mask of -inf stays one)."""
    made: dict[int, torch.Tensor] = {}  # a tensor found twice stays one tensor
    generators: dict[torch.device, torch.Generator] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            if id(value) not in made:
                device = value.device
                generator = generators.setdefault(device, torch.Generator(device=device).manual_seed(seed))
                with torch.no_grad():
                    noise = torch.rand(value.shape, generator=generator, device=device)
                    noise = noise.mul_(2 * NOISE).add_(1 - NOISE).to(value.dtype)
                    made[id(value)] = (value * noise).requires_grad_(value.requires_grad)
            return made[id(value)]
        if isinstance(value, tuple):
            items = [walk(v) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        if isinstance(value, (list, dict)):
            return [walk(v) for v in value] if isinstance(value, list) else {k: walk(v) for k, v in value.items()}
        return value

    out = walk(data)
    if not made:
        raise ValueError("setup()'s data has no floating-point tensor (in tuples, lists or dicts) to perturb: the "
                         "test must define inputs(data, seed), the data of each rep, or every rep reuses one input")
    return out


def _leaves(value: Any, where: str = "result") -> Iterator[tuple[str, Any]]:
    """(path, leaf) of a result, read with the base types' own methods (a subclass cannot compute late)."""
    if isinstance(value, torch.Tensor) or value is None or type(value) in (bool, int, float, str):
        yield where, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)):
            yield from _leaves(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in dict.items(value):
            yield from _leaves(item, f"{where}[{key!r}]")
    else:
        raise TypeError(f"{where}: gpukit checks every rep's output and cannot read a {type(value).__name__}; "
                        "experiment() returns tensors, numbers, strings, None, or lists, tuples and dicts of them")


def fingerprint(result: Any, salt: int) -> list[list[Any]]:
    """Per leaf of the result: [path, value] for a plain value; for a tensor [path, shape, its norm, its
    projections on PROJECTIONS seeded Gaussian vectors, its count of non-finite values] (float64, the
    non-finite values counted as zeros)."""
    if any(getattr(torch._C, f"_len_torch_{kind}_stack", lambda: 0)() for kind in ("function", "dispatch")):
        raise TimerReplaced("a torch function or dispatch mode is active while gpukit reads a rep's output")
    prints: list[list[Any]] = []
    for i, (where, leaf) in enumerate(_leaves(result)):
        if not isinstance(leaf, torch.Tensor):
            prints.append([where, leaf])
            continue
        if type(leaf) is not torch.Tensor:
            raise TypeError(f"{where}: experiment() returned a {type(leaf).__name__}, not a plain torch.Tensor")
        flat = leaf.detach()
        flat = _RESHAPE(_AS_REAL(flat) if flat.is_complex() else flat, (-1,))
        generator = torch.Generator(device=flat.device).manual_seed(rep_seed(salt, 10**6 + i))
        proj, square = (torch.zeros(shape, dtype=torch.float64, device=flat.device) for shape in (PROJECTIONS, ()))
        bad = torch.zeros((), dtype=torch.int64, device=flat.device)
        for start in range(0, flat.numel(), _CHUNK):
            part = _TO(_NARROW(flat, 0, start, min(_CHUNK, flat.numel() - start)), dtype=torch.float64)
            bad = bad + (part.numel() - _ISFINITE(part).sum())
            part = _NAN_TO_NUM(part, nan=0.0, posinf=0.0, neginf=0.0)
            vectors = _RANDN((part.numel(), PROJECTIONS), generator=generator, dtype=torch.float64, device=flat.device)
            proj, square = proj + _MATMUL(part, vectors), square + _DOT(part, part)
        prints.append([where, list(leaf.shape), math.sqrt(_TOLIST(square)), _TOLIST(proj), _TOLIST(bad)])
    return prints


def compare(reference: list[list[Any]], current: list[list[Any]], rtol: float, atol: float, rep: str) -> None:
    """One rep's fingerprint against the reference's (AssertionError). A tensor's allowed error, if each
    element is within atol + rtol x its reference value: |e| <= rtol |y| + atol sqrt(n); its norm may move
    by |e|, each projection by SPREAD |e| (a projection of e on a Gaussian vector is N(0, |e|^2))."""
    assert (had := [p[0] for p in reference]) == (got := [p[0] for p in current]), \
        f"{rep}: the output's parts {got} differ from the reference's {had}"
    for ref, cur in zip(reference, current):
        where = f"{rep}: {ref[0]}"
        if len(ref) == 2:
            same = ref[1] == cur[1] or (isinstance(ref[1], float) and isinstance(cur[1], (int, float)) and
                                        math.isclose(ref[1], cur[1], rel_tol=rtol, abs_tol=atol))
            assert same or ref[1] != ref[1] and cur[1] != cur[1], f"{where}: {cur[1]!r} != {ref[1]!r}"
            continue
        assert len(cur) == 5 and ref[1] == cur[1], f"{where}: shape {cur[1]} vs {ref[1]}"
        assert ref[4] == cur[4], f"{where}: {cur[4]} non-finite values vs {ref[4]}"
        allowed = rtol * ref[2] + atol * math.sqrt(math.prod(ref[1])) + 1e-9 * ref[2]  # (+ the print's rounding)
        off = max([abs(cur[2] - ref[2]) / max(allowed, 1e-300)] +
                  [abs(c - r) / max(SPREAD * allowed, 1e-300) for c, r in zip(cur[3], ref[3])])
        assert off <= 1, (f"{where}: differs from the reference run's output for the same inputs ({off:.3g} times "
                          "what the tolerance allows); each rep gets new inputs, so a kept output does not match")


def measure(experiment: Callable[[Any], Any], data: Any, warmups: int = 5, reps: int = 30, flush_l2: bool = True,
            device: str = "cuda", *, inputs: Callable[[Any, int], Any] | None = perturb, salt: int = 0,
            after_rep: Callable[[int, Any], None] | None = None) -> tuple[list[float], Any]:
    """The seconds of each timed call of experiment() and the last call's result. Warm-ups get `data`;
    rep k gets inputs(data, rep_seed(salt, k)) (None: `data` itself), made before its clock starts;
    after_rep(k, result) runs after its clock stops."""
    check_timer()
    result, cuda = None, device != "cpu"
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=device) if cuda and flush_l2 else None
    for _ in range(warmups):
        experiment(data)
    if cuda:
        _SYNC()
    times = []
    for k in range(reps):
        rep_data = inputs(data, rep_seed(salt, k)) if inputs is not None else data
        if not cuda:
            start_s = _PERF()
            result = experiment(rep_data)
            times.append(_PERF() - start_s)
        else:
            if flush is not None:
                flush.zero_()  # (after the inputs are made: they must not be in cache either)
            start, end = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
            _SYNC()  # nothing launched before the start event is counted
            _RECORD(start)
            result = experiment(rep_data)
            _SYNC()  # every stream's work is counted, not only the current stream's
            _RECORD(end)
            _EV_SYNC(end)
            times.append(_ELAPSED(start, end) / 1000.0)
        del rep_data
        if after_rep is not None:
            after_rep(k, result)
    check_timer()
    return times, result


def summary(value: Any, salt: int) -> Any:
    """The reference's record of the last rep's result, a summary as GSO's store_result keeps (not 256 MB of an
    8192x8192 output a state): each tensor's shape and SAMPLE values at `salt`'s positions (all of a smaller one)."""
    if isinstance(value, torch.Tensor):
        flat = _RESHAPE(_AS_REAL(value.detach()) if value.is_complex() else value.detach(), (-1,))
        if flat.numel() > SAMPLE:
            generator = torch.Generator().manual_seed(rep_seed(salt, 2 * 10**6))
            at = torch.randint(0, flat.numel(), (SAMPLE,), generator=generator).sort().values
            flat = _INDEX(flat, 0, _TO(at, device=flat.device))
        return {"shape": list(value.shape), "sample": _TO(flat, device="cpu")}
    if isinstance(value, (list, tuple)):
        return type(value)(summary(v, salt) for v in value)
    if isinstance(value, dict):
        return {k: summary(v, salt) for k, v in value.items()}
    return value


def check_close(reference: Any, current: Any, rtol: float = 1e-4, atol: float = 1e-5, where: str = "result") -> None:
    """Tensors equal within tolerances (a fused kernel reorders floating-point sums), the rest exactly."""
    if isinstance(reference, torch.Tensor):
        assert isinstance(current, torch.Tensor), f"{where}: expected a tensor, got {type(current).__name__}"
        assert reference.shape == current.shape, f"{where}: shape {tuple(reference.shape)} vs {tuple(current.shape)}"
        assert torch.allclose(reference.float(), current.float(), rtol=rtol, atol=atol), \
            f"{where}: differs by up to {(reference.float() - current.float()).abs().max().item():.3g}"
    elif isinstance(reference, dict):  # (its keys in any order; a summary is one: its shape, its sample)
        assert isinstance(current, dict) and set(reference) == set(current), f"{where}: key sets differ"
        for key in reference:
            check_close(reference[key], current[key], rtol, atol, f"{where}[{key!r}]")
    elif isinstance(reference, (list, tuple)):
        assert isinstance(current, (list, tuple)) and len(reference) == len(current), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(reference, current)):
            check_close(a, b, rtol, atol, f"{where}[{i}]")
    else:
        assert reference == current, f"{where}: {reference!r} != {current!r}"


def time_experiment(ns: dict[str, Any], eqcheck: bool = False, reference: bool = False, prefix: str = "",
                    warmups: int = 5, reps: int = 30, flush_l2: bool = True, device: str = "cuda") -> float:
    """GSO's protocol on a GPU: setup() untimed, then the median seconds of the timed reps, each rep's
    output checked against the reference run's when there is one (module docstring)."""
    global _calls
    check_origin()
    tolerance = {"rtol": 1e-4, "atol": 1e-5, **ns.get("TOLERANCE", {})}
    path, reps_path = f"{prefix or 'ref'}_result.pkl", f"{prefix or 'ref'}_reps.json"
    stored = None
    if not reference and (eqcheck or os.path.exists(reps_path)):  # (eqcheck without one fails, as in GSO)
        with open(reps_path) as fh:
            stored = json.load(fh)
        assert len(stored["reps"]) == reps, f"the reference run made {len(stored['reps'])} reps, this one {reps}"
    salt = stored["salt"] if stored else secrets.randbits(62)
    prints: list[list[list[Any]]] = []

    def after_rep(k: int, result: Any) -> None:
        if stored:
            compare(stored["reps"][k], fingerprint(result, salt), tolerance["rtol"], tolerance["atol"], f"rep {k + 1}")
        elif reference:  # (with neither, nothing to compare with and nothing to store)
            prints.append(fingerprint(result, salt))

    data = ns["setup"]()
    times, result = measure(ns["experiment"], data, warmups, reps, flush_l2, device, inputs=ns.get("inputs", perturb),
                            salt=salt, after_rep=after_rep)
    _calls += warmups + reps
    if reference:
        with open(path, "wb") as out:
            pickle.dump(summary(result, salt), out, protocol=pickle.HIGHEST_PROTOCOL)
        with open(reps_path, "w") as fh:
            json.dump({"salt": salt, "reps": prints}, fh)
    if eqcheck:  # (the test's check_equivalence compares the two summaries: check_close reads them)
        with open(path, "rb") as kept:
            ns.get("check_equivalence", check_close)(pickle.load(kept), summary(result, salt))
    return statistics.median(times)


def main(run_test: Callable[[bool, bool, str], float]) -> None:
    import perfkit  # perfkit's command line, the calls made written after the time (its sibling where tests run)
    perfkit.main(run_test, lambda: [f"Timed calls: {_calls}"])
