"""The command line checked and put in Hydra's terms before Hydra sees it (`python -m runner`, `optrunner run`).

Why: Hydra's own refusals are several lines long, advise `+key=value` for a misspelt key (which then adds the
typo and ignores it), list internal schema configs among a group's options, and take `--rollouts 4` for an
unknown flag. Here every such mistake is one line with the fix, before any directory exists, and the forms
a newcomer writes are made to work:

    scaffold.options.patch=submission   -> ++scaffold.options.patch=...  (a free-form mapping: any name goes)
    +budget.max_steps=50                -> ++budget.max_steps=50         (the key exists: `+` would be refused)
    sweep=ablation / +scaffold=codeact  -> +sweep=... / scaffold=...     (whether the defaults list has it)
    model.price.input=1 ...output=2     -> model.price='???' ++model.price={input: 1, output: 2}
                                           (a null node takes no field: OmegaConf refuses that)
    model.name=openai/gpt-x             -> and model.id, model.api_key_env, model.prompt_caching follow the
                                           name (its own run directory; the provider's own key variable)
    model=openai/gpt-4o-mini            -> model=litellm model.name=openai/gpt-4o-mini  (as Harbor and Inspect
                                           name models; the presets keep their names)
    tasks.ids=spanindex                 -> tasks.ids=[spanindex]  (one task, without the list's brackets)

A group option's `???` values (conf/model/local.yaml) are what that option needs: Hydra would lose them
(a `???` merged over the schema's default keeps the default), so they are checked here. A credential on the
command line (model.kwargs.api_key=..., a URL with a password) is refused first (`refuse_credentials`).
"""
from __future__ import annotations

import difflib
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import HydraException

from harness.models.redaction import carries_credential, secret_name
from runner import conftree
from runner.config import ConfigError, lookup, suggest, unknown_key
from runner.conftree import defaults, groups, preset

# Flags that replace Hydra's config search: the groups below are then not the ones that count.
_OWN_CONFIG = ("--config-path", "-cp", "--config-name", "-cn")
_CONFIG_DIR = ("--config-dir", "-cd")  # a folder of more group options, searched beside conf/ (conftree)
# Flags that show something instead of running: a sweep file or an unset value is fine to look at.
_SHOWING = ("--help", "-h", "--hydra-help", "--version", "--cfg", "-c", "--info", "-i", "--shell-completion", "-sc")
_MULTIRUN = ("--multirun", "-m")
# A group option's `???` field as written in the line that refuses it.
_EXAMPLES = {"api_base": "http://HOST:PORT/v1", "served_name": "NAME", "name": "PROVIDER/MODEL",
             "run_dir": "outputs/runs/NAME", "price.input": "0.2", "price.output": "0.8"}
_PRICE_NOTE = "prices in USD per million tokens"
_NAME_NOTE = "any litellm model name, e.g. openai/gpt-4o-mini"


def model_slug(name: Any) -> str:
    """A run-directory-safe model id from a litellm model name: openai/gpt-4o -> openai-gpt-4o."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(name)).strip("-.") or "model"


@cache
def _flags() -> dict[str, Any]:
    """Hydra's flags -> their argparse actions (read from Hydra's own parser: what takes a value)."""
    from hydra._internal.utils import get_args_parser

    return {opt: action for action in get_args_parser()._actions for opt in action.option_strings}


def _parse(args: list[str]) -> list[Override]:
    parser = OverridesParser.create()
    out = []
    for arg in args:
        try:
            out += parser.parse_overrides([arg])
        except HydraException as err:
            lines = [line.strip() for line in str(err).strip().splitlines()
                     if line.strip() and not line.startswith(("Error parsing override", "See https://"))]
            why = lines[0] if lines else "not an override"
            if "=" not in arg and _PROVIDER_MODEL.fullmatch(f"model={arg}"):  # `-m openai/gpt-x`: -m is a sweep
                raise ConfigError(f"{arg!r} alone is not a setting: name the model as model={arg} (here -m "
                                  "means a sweep, as in Hydra)") from None
            raise ConfigError(f"cannot read {arg!r} ({why}): write key=value, and quote a value with spaces or "
                              "brackets, e.g. key='a b'") from None
    return out


def _text(override: Override, prefix: str | None = None) -> str:
    """The override written back, with another prefix (+, ++) where given; its value as typed."""
    old = {OverrideType.ADD: "+", OverrideType.FORCE_ADD: "++", OverrideType.DEL: "~"}.get(override.type, "")
    head = (old if prefix is None else prefix) + override.key_or_group
    if override.package is not None:
        head += f"@{override.package}"
    line = override.input_line or ""
    return f"{head}={line.split('=', 1)[1]}" if "=" in line else head


def _value(override: Override) -> str:
    line = override.input_line or ""
    return line.split("=", 1)[1] if "=" in line else ""


def _options(override: Override) -> list[str | None] | None:
    """A group override's option(s); None when Hydra decides (a glob)."""
    if override.is_sweep_override():
        try:
            return list(override.sweep_string_iterator())
        except Exception:  # noqa: BLE001 - glob(...): Hydra expands it against the group's options
            return None
    value = override.value()
    return [None if value is None else str(value)]


def _check_option(group: str, option: str | None) -> None:
    options = groups()[group]
    if option is None:
        if defaults().get(group, None) is not None:
            raise ConfigError(f"{group} cannot be left out; choose one of {', '.join(options)}")
        return
    if option not in options:
        near = difflib.get_close_matches(option, options, n=1)
        hint = f" (did you mean {group}={near[0]}?)" if near else ""
        raise ConfigError(f"unknown {group} {option!r}{hint}; choose one of {', '.join(options)}")


def _flag_hint(arg: str, following: str | None) -> str:
    """One line for a flag Hydra does not have: `--rollouts 4` (an argparse habit) is `rollouts=4` here."""
    name, eq, value = arg.lstrip("-").partition("=")
    key = name.replace("-", "_")
    takes_next = not eq and following is not None and not following.startswith("-") and "=" not in following
    value = following if takes_next and following is not None else value
    shown = f"{arg} {following}" if takes_next else arg
    if not (key in groups() or lookup(key).known):
        if near := difflib.get_close_matches(arg.split("=", 1)[0], list(_flags()), n=1, cutoff=0.8):
            return f"unknown flag {arg}: did you mean {near[0]}?"
        key = suggest(key, tuple(groups())) or ""
    if key:
        return f"{shown}: settings are written key=value here: {key}={value or 'VALUE'}"
    return f"unknown flag {arg}: settings are written key=value (e.g. rollouts=4); see --help"


def _split(args: list[str]) -> tuple[list[str], list[int]]:
    """The flags given and the positions of the overrides; one line for a flag Hydra lacks."""
    flags, positions, i = [], [], 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            if name not in _flags():
                raise ConfigError(_flag_hint(arg, args[i + 1] if i + 1 < len(args) else None))
            flags.append(name)
            action, following = _flags()[name], args[i + 1] if i + 1 < len(args) else None
            if "=" not in arg and following is not None and (
                    action.nargs is None or (action.nargs == "?" and following in (action.choices or ()))):
                i += 1  # the flag's own value (--cfg job, --info defaults)
        else:
            positions.append(i)
        i += 1
    return flags, positions


def _flag_values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """The values given to flags `names` (`--flag VALUE` or `--flag=VALUE`)."""
    out = []
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in names:
            out += [value] if eq else args[i + 1:i + 2]
    return out


# Where a key goes instead of the command line (said by every refusal of one).
_KEY_ADVICE = ("put the key in an environment variable and name it with model.api_key_env=VARIABLE "
               "(judge.api_key_env for the judge; a provider's own variable such as OPENAI_API_KEY needs nothing)")


def refuse_credentials(args: list[str]) -> None:
    """A credential on the command line is refused before anything is parsed or written: shell history,
    `ps`, Hydra's .hydra/overrides.yaml and the run's config.yaml would all keep it. Refused: a setting or
    flag whose name holds a secret (model.kwargs.api_key, ++model.api_key, --token: whatever its value, a
    `${oc.env:...}` included, since config.yaml stores the resolved value) and any value that carries one
    (a URL's password, `?key=`, an `sk-...` key, a key variable's value). The line names the setting,
    never the value."""
    for i, arg in enumerate(args):
        head, eq, _value = arg.partition("=")
        flag = arg.startswith("-")
        name = head.lstrip("-") if flag else head.lstrip("+~").split("@", 1)[0]
        parts = [name] if flag else re.split(r"[./]", name)
        shown = head if flag else name
        if (eq or flag) and any(secret_name(part) for part in parts):
            raise ConfigError(f"{shown} would put a credential on the command line, where shell history and the "
                              f"run's files keep it: {_KEY_ADVICE}")
        if carries_credential(_value if eq and not flag else arg):
            what = f"the value of {shown}" if eq and not flag else f"argument {i + 1}"
            raise ConfigError(f"{what} carries a credential (a key, token or password); the command line is no "
                              f"place for one: {_KEY_ADVICE}, and give URLs without it")


_PROVIDER_MODEL = re.compile(r"model=(?P<name>[A-Za-z0-9_.-]+/[^\s=,\[\]{}]+)")
_ONE_ID = re.compile(r"(?P<key>tasks\.ids)=(?P<id>[A-Za-z0-9_.-]+)")


def shorthands(args: list[str]) -> list[str]:
    """The forms other tools take, in this tool's terms: `model=PROVIDER/NAME` (any litellm model, as Harbor and
    Inspect name them) is `model=litellm model.name=PROVIDER/NAME` (in a sweep, a list of them too); `tasks.ids=ID`
    is a list of one."""
    out: list[str] = []
    for arg in args:
        names = arg[len("model="):].split(",") if arg.startswith("model=") else []
        if names and all(_PROVIDER_MODEL.fullmatch(f"model={n}") and n not in groups()["model"] for n in names):
            out += ["model=litellm", f"model.name={','.join(names)}"]  # (several: a sweep over them)
        elif (found := _ONE_ID.fullmatch(arg)) and found["id"] != "null":
            out.append(f"{found['key']}=[{found['id']}]")
        else:
            out.append(arg)
    return out


def prepare(args: list[str], prog: str) -> list[str]:
    """The arguments as Hydra should get them; raises ConfigError (one line) for a mistake."""
    refuse_credentials(args)
    args = shorthands(args)
    flags, positions = _split(args)
    if any(f in _OWN_CONFIG for f in flags):
        return args  # another config tree: its groups and keys are not ours to judge
    conftree.add_dirs([Path(v) for v in _flag_values(args, _CONFIG_DIR)])  # (their options count; keys stay ours)
    parsed = _parse([args[i] for i in positions])
    multirun = any(f in _MULTIRUN for f in flags) or any(
        o.key_or_group == "hydra.mode" and str(o.value()) == "MULTIRUN" for o in parsed)
    chosen = _chosen(parsed)
    texts = [_rewrite(o, multirun, chosen) for o in parsed]
    texts += _follow_name({o.key_or_group for o in parsed if o.type != OverrideType.DEL})
    texts = _join_nullable(parsed, texts)
    out = list(args)
    for pos, text in zip(positions, texts):
        out[pos] = text
    if positions:  # added overrides go beside the others: argparse takes no overrides after a later flag
        out[positions[-1] + 1:positions[-1] + 1] = texts[len(positions):]
    out = [a for a in out if a]  # "": an override joined into another
    if not multirun and not any(f in _SHOWING for f in flags):
        jobs = _parse([t for t in texts if t])
        _refuse_sweep_file(jobs, args, prog)
        check_job(jobs)
    return out


def _rewrite(override: Override, multirun: bool, chosen: dict[str, str | None]) -> str:
    """One override checked and written the way Hydra takes it (`chosen`: each group's option)."""
    key = override.key_or_group
    if key == "hydra" or key.startswith(("hydra.", "hydra/")):
        return _text(override)
    if override.is_sweep_override() and not multirun:
        values = _options(override)
        count = f" over {len(values)} values" if values else ""
        as_list = "" if key in groups() else f" (or write {key}=[...] for a list)"
        raise ConfigError(f"{override.input_line} is a sweep{count}: add -m to run one job per value{as_list}")
    if key in groups() and "." not in key:
        if not override.is_sweep_override() and override.type != OverrideType.DEL:
            for option in _options(override) or []:
                _check_option(key, option)
        if override.type == OverrideType.DEL:
            return _text(override)
        # Hydra takes `+group=...` only for a group not in the defaults list, `group=...` only for one in it.
        return _text(override, prefix="" if key in defaults() else "+")
    where = lookup(key)
    if not where.known:
        raise ConfigError(unknown_key(key, None if override.type == OverrideType.DEL else _value(override),
                                      tuple(groups())))
    if where.nullable in chosen and chosen[where.nullable] is None:  # judge.votes=3 with no judge
        node = where.nullable
        raise ConfigError(f"{key} is an option of the {node}, but no {node} is chosen: add {node}=OPTION "
                          f"(one of {', '.join(groups()[node])})")
    if override.type == OverrideType.DEL:
        return _text(override)
    if override.type == OverrideType.ADD or where.free:
        return _text(override, prefix="++")  # `+` on an existing key, or a name inside a free-form mapping
    return _text(override)


def _follow_name(keys: set[str]) -> list[str]:
    """`model.name=X` under any model option names the model actually used: its id (the run directory) and
    the provider settings of the option's own model follow it, unless they are given too."""
    if "model.name" not in keys:
        return []
    follow = {"model.id": "'${model_slug:${model.name}}'", "model.api_key_env": "null",
              "model.prompt_caching": "null"}
    return [f"{key}={value}" for key, value in follow.items() if key not in keys]


def _join_nullable(parsed: list[Override], texts: list[str]) -> list[str]:
    """`model.price.input=1 model.price.output=2` under a model whose price is null: OmegaConf cannot set a
    field of a null node, so the fields go in as one mapping over an emptied node."""
    out = list(texts)
    joined: dict[str, list[int]] = {}  # a null node -> the indices of the overrides of its fields
    for i, o in enumerate(parsed):
        where = lookup(o.key_or_group)
        node = where.nullable
        if (node is None or "." not in node or o.type == OverrideType.DEL or o.is_sweep_override()
                or o.key_or_group.count(".") != node.count(".") + 1):
            continue
        group = node.split(".")[0]
        chosen = _chosen(parsed).get(group)
        if chosen and isinstance(_dig(preset(group, chosen), node.split(".")[1:]), dict):
            continue  # the option has the node: its fields take values as they are
        joined.setdefault(node, []).append(i)
    for node, indices in joined.items():
        fields = ", ".join(f"{parsed[i].key_or_group.rsplit('.', 1)[1]}: {_value(parsed[i])}" for i in indices)
        out[indices[0]] = f"{node}='???'"  # emptied first: a mapping merges into a missing node, not a null one
        for i in indices[1:]:
            out[i] = ""
        out.append(f"++{node}={{{fields}}}")  # ++: another key than the reset's, which a sweep would drop
    return out


def _dig(tree: Any, parts: list[str]) -> Any:
    for part in parts:
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree


def _chosen(parsed: list[Override]) -> dict[str, str | None]:
    """The option each group runs with: the command's, else the default (a swept group is left out)."""
    out: dict[str, str | None] = dict(defaults())
    for o in parsed:
        if o.key_or_group in groups() and "." not in o.key_or_group:
            if o.type == OverrideType.DEL:
                out[o.key_or_group] = None
            elif o.is_sweep_override():
                out.pop(o.key_or_group, None)
            else:
                out[o.key_or_group] = None if o.value() is None else str(o.value())
    return out


def _refuse_sweep_file(parsed: list[Override], args: list[str], prog: str) -> None:
    """A group option that defines a sweep (conf/sweep/*.yaml) runs only with -m: say how many jobs."""
    for group, option in _chosen(parsed).items():
        if option is None or option not in groups().get(group, ()):
            continue
        params = _dig(preset(group, option), ["hydra", "sweeper", "params"])
        if not params:
            continue
        jobs = math.prod(len(_options(o) or [1]) for o in _parse([f"{k}={v}" for k, v in params.items()]))
        raise ConfigError(f"{group}={option} defines a sweep of {jobs} jobs (over {', '.join(map(str, params))}): "
                          f"add -m to run it: {prog} -m {' '.join(args)}")


def check_job(parsed: list[Override]) -> None:
    """One job's group options (no schema_* configs) and what they need (their `???` values)."""
    keys = {o.key_or_group for o in parsed if o.type != OverrideType.DEL and o.key_or_group not in groups()}
    for o in parsed:
        if o.key_or_group in groups() and "." not in o.key_or_group and o.type != OverrideType.DEL:
            for option in _options(o) or []:
                _check_option(o.key_or_group, option)
    chosen = _chosen(parsed)
    for group, option in chosen.items():
        if option is None or option not in groups().get(group, ()):
            continue
        needed = [f"{group}.{path}" for path in _missing(preset(group, option))]
        unset = [key for key in needed
                 if not any(key == k or key.startswith(k + ".") for k in keys)]
        if unset:
            _refuse_unset(group, option, unset)


def _missing(tree: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        if isinstance(value, dict):
            out += _missing(value, f"{prefix}{key}.")
        elif value == "???":
            out.append(f"{prefix}{key}")
    return out


def _refuse_unset(group: str, option: str, unset: list[str]) -> None:
    names = unset[0] if len(unset) == 1 else f"{', '.join(unset[:-1])} and {unset[-1]}"
    example = " ".join(f"{key}={_EXAMPLES.get(key.split('.', 1)[1], 'VALUE')}" for key in unset)
    notes = [note for note, needed in ((_NAME_NOTE, f"{group}.name" in unset),
                                       (_PRICE_NOTE, any(".price." in key for key in unset))) if needed]
    note = f" ({'; '.join(notes)})" if notes else ""
    raise ConfigError(f"{group}={option} needs {names}: set {'it' if len(unset) == 1 else 'them'}, e.g. "
                      f"{example}{note}")


def check_job_args(overrides: list[str]) -> None:
    """A sweep's job (its overrides as Hydra expands them) checked as a single run is."""
    refuse_credentials(overrides)
    check_job(_parse(overrides))
