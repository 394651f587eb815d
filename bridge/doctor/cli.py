"""``bridge doctor``: what is installed and usable."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bridge.core.layout import DEFAULT_DATA_DIR


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="show what is installed and usable")
    p.add_argument("--data-dir", type=Path, default=Path(os.environ.get("BRIDGE_DATA", DEFAULT_DATA_DIR)))
    p.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("BRIDGE_CACHE", "cache")))
    p.add_argument("--smoke", action="store_true", help="also run one llama.cpp generation and one pyserini search")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from bridge.doctor.checks import run_doctor

    return run_doctor(args.data_dir, args.cache_dir, smoke=args.smoke)
