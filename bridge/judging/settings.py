"""How a judge declares its settings: one frozen dataclass in the judge's own module, registered with the judge.

The fields a command line may set carry an :class:`Option` (see :func:`option`): plain data, because only command-line
modules may import argparse. One generic module, :mod:`bridge.label.judge_options_cli`, turns the registered judges'
declarations into flags and the parsed flags back into configs, so that a new judge adds no flag by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any

OPTION = "bridge.option"
"""The key of a field's :class:`Option` in its metadata."""


@dataclass(frozen=True)
class Option:
    """A command-line flag that sets one field of a judge's config (or several, with ``split``)."""

    flag: str
    help: str
    type: Callable[[str], Any] | None = None
    """Converts the flag's text (None: the type of the field's default; text where the default is None)."""
    choices: tuple[Any, ...] | None = None
    metavar: str | None = None
    split: tuple[str, ...] = ()
    """One flag for several fields, its text the values joined by commas (``--band LOW,HIGH`` sets low and high)."""

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def option(default: Any, flag: str, help: str, **declared: Any) -> Any:
    """A config field with ``default`` that the command line sets with ``flag``."""
    return field(default=default, metadata={OPTION: Option(flag, help, **declared)})


@dataclass(frozen=True)
class NoConfig:
    """The config of a judge without settings."""


@dataclass(frozen=True)
class Declared:
    """A field's option, with the field's default (several fields' defaults joined by commas for a ``split``)."""

    option: Option
    default: Any


def nested(f: Any) -> type | None:
    """The config class of a field that holds another config (a dataclass made by its default factory)."""
    factory = f.default_factory
    return factory if factory is not MISSING and isinstance(factory, type) and is_dataclass(factory) else None


def declared_options(config: type) -> Iterator[Declared]:
    """Every option of ``config`` and of the configs it holds, in field order."""
    defaults = {f.name: f.default for f in fields(config)}
    for f in fields(config):
        if (inner := nested(f)) is not None:
            yield from declared_options(inner)
        elif (opt := f.metadata.get(OPTION)) is not None:
            default = ",".join(str(defaults[n]) for n in opt.split) if opt.split else f.default
            yield Declared(opt, default)
