"""The dataset a command names (``--dataset``, ``--data-dir``, ``--limit``:
:func:`bridge.core.shared_options_cli.add_common_options`), loaded. Here rather than in
:mod:`bridge.core.shared_options_cli`, which sits below the datasets."""

from __future__ import annotations

import argparse

from bridge.datasets import Dataset, load_dataset


def dataset_from_args(args: argparse.Namespace) -> Dataset:
    return load_dataset(args.dataset, args.data_dir, args.limit)
