"""The judges' options, shared by ``bridge label``, ``judge-eval``, ``score`` and ``reusability``, and the
:class:`~bridge.judging.JudgeSpec` they describe (:func:`judge_spec_from_args`).

Generic: every registered judge's config declares its own options (:mod:`bridge.judging.settings`); this module turns
them into flags and the parsed flags back into configs, so that a judge adds no flag here. A flag that several
configs declare (``--temperature``) is one flag that sets all of them.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any

from bridge.core.errors import BridgeError
from bridge.judging import JUDGES, JudgeSpec, default_judge, judge_traits
from bridge.judging.base import registered_judges
from bridge.judging.settings import OPTION, Declared, Option, declared_options, nested
from bridge.label.chain import answer_fallback, answer_judges


def judge_options() -> list[Declared]:
    """Every registered judge's options, once per flag, in registration order (a flag declared twice must be
    declared alike)."""
    seen: dict[str, Declared] = {}
    for entry in registered_judges():
        for declared in declared_options(entry.config):
            first = seen.setdefault(declared.option.flag, declared)
            if first != declared:
                raise BridgeError(f"{declared.option.flag} is declared twice, differently ({entry.name})")
    return list(seen.values())


def add_judge_options(p: argparse.ArgumentParser) -> None:
    """The ``judges`` group: the registered judges' options, ``--answer-judge``."""
    g = p.add_argument_group("judges")
    for declared in judge_options():
        _add_option(g, declared)
    g.add_argument(
        "--answer-judge",
        choices=[*answer_judges(), "off"],
        default=default_judge(answer_bearing=True),
        help="label: with --reference, the judge of the pairs that hold an answer string (default: answer-context, "
        "a calibration over where the answer sits and the LLM's one-pass P; answer-lexical: the same without "
        "the LLM, no call; answer-reader: with the reader's likelihood of the answers with and without the passage; "
        "off: the fallback judge decides them too)",
    )


PLAIN_TYPES = (int, float, str)
"""The types a declared option's default may give its flag; any other needs its own ``type``."""


def _add_option(g: argparse._ArgumentGroup, declared: Declared) -> None:
    """One declared option as a flag, typed by its declaration or else by its field's default (int, float, text; a
    bool is a switch). A flag another option of the command already has is refused, naming it."""
    opt, default = declared.option, declared.default
    try:
        if isinstance(default, bool):  # a switch: on with the flag (off with --no-FLAG where it is on by default)
            action = argparse.BooleanOptionalAction if default else "store_true"
            g.add_argument(opt.flag, action=action, default=default, help=opt.help)
            return
        g.add_argument(opt.flag, type=_flag_type(opt, default), default=default, help=opt.help, **_shown(opt))
    except argparse.ArgumentError as exc:
        raise BridgeError(f"a judge's option {opt.flag} cannot be added: {exc}") from None


def _flag_type(opt: Option, default: Any) -> Any:
    if opt.split:
        return str
    if opt.type is not None:
        return opt.type
    if default is None:
        return str
    if type(default) not in PLAIN_TYPES:
        raise BridgeError(f"a judge's option {opt.flag}: its default {default!r} is not int, float or text; declare "
                          "its type")  # fmt: skip
    return type(default)


def _shown(opt: Option) -> dict[str, Any]:
    extra: dict[str, Any] = {"metavar": opt.metavar} if opt.metavar else {}
    if opt.choices:
        extra["choices"] = list(opt.choices)
    return extra


def judge_config_from_args(args: argparse.Namespace, config: type) -> Any:
    """``config`` with the values the command line gives its options (the other fields keep their defaults)."""
    values: dict[str, Any] = {}
    for f in fields(config):
        if (inner := nested(f)) is not None:
            values[f.name] = judge_config_from_args(args, inner)
        elif (opt := f.metadata.get(OPTION)) is not None:
            values.update(
                _option_values(opt, getattr(args, opt.dest)) if opt.split else {f.name: getattr(args, opt.dest)}
            )
    return config(**values)


def _option_values(opt: Option, text: str) -> dict[str, Any]:
    """The fields a split option sets, from its comma-separated text."""
    convert = opt.type or str
    try:
        parts = [convert(x) for x in text.split(",")]
    except (TypeError, ValueError):
        parts = []
    if len(parts) != len(opt.split):
        shape = opt.metavar or ",".join(name.upper() for name in opt.split)
        raise BridgeError(f"{opt.flag} must be {shape} ({len(opt.split)} comma-separated values), got {text!r}")
    return dict(zip(opt.split, parts, strict=True))


def judge_spec_from_args(args: argparse.Namespace, name: str, fallback: str | None = None) -> JudgeSpec:
    """The judge ``name`` with the settings of the command line (and ``fallback``, the judge of the pairs an answer
    judge leaves, with them too). Every judge's options are read, so that a malformed one is an error whichever
    judge runs."""
    for entry in JUDGES.values():
        judge_config_from_args(args, entry.config)
    spec = JudgeSpec(name, judge_config_from_args(args, JUDGES[name].config))
    return spec if fallback is None else JudgeSpec(name, spec.config, judge_spec_from_args(args, fallback))


def refine_spec_from_args(args: argparse.Namespace, judge: JudgeSpec) -> JudgeSpec | None:
    """``--refine``'s judge with the command line's settings. An answer judge hands the pairs without an answer match
    to the chain's answer judge's fallback (the cascade where the chain has no answer judge), as the chain would: its
    config id, and so what a later run resumes, depends on it."""
    if args.refine is None:
        return None
    if not judge_traits(args.refine).answer_bearing:
        return judge_spec_from_args(args, args.refine)
    fallback = judge.fallback.name if judge.fallback is not None else answer_fallback()
    return judge_spec_from_args(args, args.refine, fallback)
