"""Prompt templates (Jinja2 files in this folder); code only chooses and orders their blocks."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

PROMPT_DIR = Path(__file__).parent


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPT_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def template_module(name: str) -> Any:
    """The macros of a template file, callable from Python (``module.task(True)``)."""
    return _environment().get_template(name).module


def template_digest(*names: str) -> str:
    """Hash of template sources: part of every judge's configuration id."""
    h = hashlib.sha256()
    for name in names:
        h.update((PROMPT_DIR / name).read_bytes())
    return h.hexdigest()[:12]
