"""Run benchmarks: ``python -m bench`` (all) or ``python -m bench NAME ...`` (``bench_NAME.py``).

Every benchmark module has ``main(argv: list[str]) -> int`` and prints its own table, with
ratios against a baseline measured in the same run (absolute seconds drift on shared machines).
Append the printed tables to bench/RESULTS.md together with the command that produced them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def available() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(available())})")
    args, rest = parser.parse_known_args(argv)
    names = args.names or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(available())}")
    status = 0
    for name in names:
        print(f"\n=== bench {name} ===", flush=True)
        start = time.perf_counter()
        status |= importlib.import_module(f"bench.bench_{name}").main(rest)
        print(f"=== bench {name}: {time.perf_counter() - start:.1f} s ===", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
