"""Command-line overrides checked before Hydra sees them, so mistakes speak simstack.

Hydra refuses a misspelt key with "Key 'x' is not in struct", an unknown group option
with a list of search paths, and exits 1 with a traceback hint. This module reads the
same overrides with Hydra's own parser, compares them with the composed default config
and raises a ``ConfigError`` that says which key, what is known and how to add a new key;
the CLI prints it as ``simstack: error: ...`` and exits 2, like every other user error.
A ``+`` adds a key only where the keys are the user's own (``+parameters.NAME``,
``+flags.NAME``, ``+where.COLUMN``): ``+sim.replicatons=3`` is the same typo as
``sim.replicatons=3`` and is refused the same way, never run with the default.
Overrides of Hydra's own settings (``hydra.*``, ``hydra/launcher=...``) are composed as Hydra
will compose them, so a key the launcher does not have or a value of the wrong type is one
line too (Hydra said it in five, exit 1), and the values Hydra's sweeper and launcher only
refuse once the sweep's folder is claimed (``hydra.sweeper.max_batch_size=-1``, the joblib
launcher's ``n_jobs=0``: a traceback then) are checked here.

The check compares the overrides with the default config, which costs a composition (about
0.15 s). A single command hands it the config Hydra has already composed from the same
overrides (``simstack.cli.single``): Hydra has then accepted every key and option, so only
what Hydra lets through and simstack refuses is left to check (an interpolation, a ``+`` or
``++`` outside the user's own keys, a key given twice), and the default config is composed
only for those.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra._internal.utils import get_args_parser  # Hydra's own argv parser, so options split the same way
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from simstack.errors import ConfigError
from simstack.lang.schema import suggest

_ABSENT = object()
# The settings whose keys are the user's own, added with +KEY=VALUE (a parameter or flag of the
# model, a column of a prediction grid); every other key is simstack's, so a new one is a typo.
OPEN = ("parameters", "flags", "where")


def check_overrides(argv: Sequence[str], config_dir: Path, composed: DictConfig | None = None) -> dict[str, list[str]]:
    """Raise ``ConfigError`` for the first override Hydra would refuse (or read as an
    interpolation); do nothing for command lines Hydra must interpret itself. Returns the
    values each of ``model``, ``whatif`` and ``models_dir`` will take (all of a sweep's),
    so the caller can read those files before Hydra creates any directory. ``composed``:
    the config Hydra composed from exactly these overrides (``hydra`` node included), when it
    did; the default config is then composed only if an override needs it to be judged."""
    args, unknown = get_args_parser().parse_known_args(list(argv))
    if unknown or args.help or args.hydra_help or args.shell_completion or args.config_name or args.config_path \
            or args.config_dir or args.experimental_rerun:
        return {}
    parser = OverridesParser.create()
    parsed: list[Override] = []
    for text in args.overrides:
        try:
            parsed.extend(parser.parse_overrides([text]))
        except HydraException as exc:
            detail = str(exc).strip().splitlines()[0]
            raise ConfigError(f"cannot read the override {_cut(text)!r} ({detail}); write key=value, +key=value "
                              "to add a key, or key=a,b,c with -m for a sweep") from None
        except ValueError:  # Hydra's own int(): a whole number of more digits than Python converts
            raise ConfigError(f"cannot read the override {_cut(text)!r}: a number of more than 4,300 digits; "
                              "write a number a model can use") from None
    ours = [o for o in parsed if not _is_hydra(o)]
    hydra_groups = sorted({o.key_or_group for o in parsed if o.key_or_group.startswith("hydra/")})
    if composed is None or _needs_default(ours):
        base, options = _compose(config_dir, hydra_groups)
    else:  # Hydra composed them all: every key and option exists (an unknown one was a composition error)
        base, options = None, {}
    groups = {p.name: sorted(f.stem for f in p.glob("*.yaml")) for p in config_dir.iterdir() if p.is_dir()}
    for override in parsed:  # e.g. hydra/launcher=joblib: the options installed plugins provide
        if override.key_or_group in options and override.type in (OverrideType.CHANGE, OverrideType.ADD):
            _check_option(override, options[override.key_or_group])
    if composed is None:
        _check_hydra([o for o in parsed if _is_hydra(o) and not o.is_sweep_override()], config_dir)
    else:
        _check_hydra_values(composed.hydra)
    given = base if base is not None else composed
    assert given is not None
    chosen = {key: [] if given.get(key) is None else [str(given.get(key))] for key in ("model", "whatif", "models_dir")}
    for override in ours:
        _check_one(override, base, groups)
        if override.key_or_group in chosen and override.type != OverrideType.DEL:
            chosen[override.key_or_group] = [v for v in _values(override) if v not in ("null", "")]
    return chosen


def _cut(text: str, limit: int = 80) -> str:
    """An override as an error echoes it: cut short (a 5,000-digit value need not be shown whole)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _needs_default(ours: Sequence[Override]) -> bool:
    """Overrides that Hydra composes but the check judges against the default config: a ``+``
    or ``++`` outside the user's own keys (a new key there is a typo, an existing one is said to
    need no ``+``), and a key given twice (``+parameters.x=1 parameters.x=2``: the second
    would need its ``+``)."""
    keys = [o.key_or_group for o in ours]
    return len(set(keys)) < len(keys) or any(
        o.type in (OverrideType.ADD, OverrideType.FORCE_ADD) and o.key_or_group.rpartition(".")[0] not in OPEN
        for o in ours)


def _is_hydra(override: Override) -> bool:
    key = override.key_or_group
    return key == "hydra" or key.startswith(("hydra.", "hydra/")) or (override.package or "").startswith("hydra")


def _compose(config_dir: Path, hydra_groups: Sequence[str]) -> tuple[DictConfig, dict[str, list[str]]]:
    """The default config, and the options of each named Hydra group (``hydra/launcher``)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        options = {group: loader.get_group_options(group) for group in hydra_groups}
        return compose(config_name="config"), {g: o for g, o in options.items() if o}


def _check_hydra(overrides: Sequence[Override], config_dir: Path) -> None:
    """Hydra's own settings composed with ``overrides`` as Hydra will; a refusal in one line."""
    if not overrides:
        return
    from hydra import compose, initialize_config_dir

    lines = [o.input_line or "" for o in overrides]
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            hydra = compose(config_name="config", overrides=lines, return_hydra_config=True).hydra
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(f"{_one_line(exc)} (in {', '.join(map(repr, map(_cut, lines)))})") from None
    _check_hydra_values(hydra)


def _check_hydra_values(hydra: DictConfig) -> None:
    """The values Hydra composes but its sweeper and launcher refuse later, with a traceback."""
    batch = hydra.sweeper.get("max_batch_size")
    if batch is not None and batch < 1:
        raise ConfigError(f"hydra.sweeper.max_batch_size: must be a whole number of at least 1 (or null), got {batch}")
    if hydra.launcher.get("n_jobs") == 0:
        raise ConfigError("hydra.launcher.n_jobs: 0 jobs at once runs nothing; write a number of at least 1 "
                          "(or -1 for one per CPU)")


def _one_line(exc: BaseException) -> str:
    """Hydra's message and its cause's, without OmegaConf's ``full_key:``/``object_type=`` lines."""
    seen: list[str] = []
    for part in (exc, exc.__cause__):
        for line in str(part or "").splitlines():
            line = line.strip().rstrip(".")
            if line and not line.startswith(("full_key:", "object_type=", "reference_type=")) and line not in seen:
                seen.append(line)
    return "; ".join(seen) or type(exc).__name__


def _check_option(override: Override, options: list[str]) -> None:
    key, line = override.key_or_group, override.input_line or ""
    for value in _values(override):
        if value not in options:
            raise ConfigError(f"unknown {key} option {value!r}{suggest(value, options)} in {line!r}; "
                              f"{key} options: {', '.join(options)}")


def _values(override: Override) -> list[str]:
    if override.is_sweep_override():
        return [str(v) for v in override.sweep_string_iterator()]
    value = override.value()
    if isinstance(value, list):  # whatif=[A,B]: a run that compares several what-ifs
        return [str(v) for v in value]
    return [str(override.get_value_element_as_str())]


def _check_one(override: Override, base: DictConfig | None, groups: dict[str, list[str]]) -> None:
    """``base``: the default config, or None where Hydra has composed the overrides (each key
    then exists, or is a ``+`` into ``OPEN``: ``_needs_default``)."""
    key, line = override.key_or_group, override.input_line or ""
    if "${" in line:
        raise ConfigError(f"{key}: interpolation '${{...}}' is not allowed in simstack settings (got {line!r}); "
                          "write the value itself")
    if override.type == OverrideType.DEL and (base is None or OmegaConf.select(base, key, default=_ABSENT)
                                              is not _ABSENT):  # composed: Hydra found it to delete
        raise ConfigError(f"cannot delete the setting {key!r} ({line!r}): every simstack setting has a value; "
                          f"write {key}=VALUE, or leave it out for its default")
    if key in groups and override.type in (OverrideType.CHANGE, OverrideType.ADD):
        _check_option(override, groups[key])
        return
    if base is None:
        return
    current = OmegaConf.select(base, key, default=_ABSENT)
    if override.type == OverrideType.ADD and current is not _ABSENT:
        raise ConfigError(f"{key} is already a setting; write {line.lstrip('+')} without the '+'")
    if current is not _ABSENT:
        return
    parent = key.rpartition(".")[0]
    holder = OmegaConf.select(base, parent, default=_ABSENT) if parent else base
    if override.type in (OverrideType.ADD, OverrideType.FORCE_ADD) and parent in OPEN:
        return  # +parameters.NAME=...: a key of the user's own; any other + is refused like a typo
    if isinstance(holder, DictConfig):
        known = [str(k) for k in holder.keys()]
        where = f"{parent} has" if parent else "known settings are"
        listed = ", ".join(known) if parent else ", ".join(_leaves(base))
        bare = line.lstrip("+~")
        hint = f"; to add a new key, write +{bare}" if parent in OPEN and override.type == OverrideType.CHANGE else ""
        close = suggest(key, [f"{parent}.{k}" if parent else k for k in known])
        raise ConfigError(f"unknown setting {key!r}{close}; {where}: {listed or '(none)'}{hint}")
    raise ConfigError(f"unknown setting {key!r}: {parent!r} is not a group of settings; known settings: "
                      f"{', '.join(_leaves(base))}")


def _leaves(cfg: Any, prefix: str = "") -> list[str]:
    """Dotted names of the settings, e.g. ``model``, ``sim.seed``, ``parameters`` (empty ones too)."""
    out: list[str] = []
    for name in cfg.keys():
        value = cfg[name]
        dotted = f"{prefix}{name}"
        if isinstance(value, DictConfig) and len(value):
            out.extend(_leaves(value, f"{dotted}."))
        else:
            out.append(dotted)
    return out


__all__ = ["check_overrides"]
