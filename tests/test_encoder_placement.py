"""Where the encoders run and which precision they keep: the device rule and the probe file's key, no model loaded."""

from __future__ import annotations

import pytest

from bridge.core.errors import BridgeError
from bridge.encoders import device as devices
from bridge.encoders import precision
from bridge.encoders.embeddings import SentenceEncoder
from bridge.retrievers.splade import SpladeRetriever


@pytest.mark.parametrize("cuda", [False, True])
def test_auto_takes_a_cuda_device_where_torch_sees_one_and_sizes_batches_for_it(monkeypatch, cuda):
    monkeypatch.setattr(devices, "cuda_available", lambda: cuda)
    dense, splade = SentenceEncoder(), SpladeRetriever()
    assert dense.device == splade.device == ("cuda" if cuda else "cpu")
    assert (dense.batch_size, splade.batch_size) == ((256, 128) if cuda else (16, 16))
    assert dense.params["device"] == dense.device  # what a worker rebuilds the encoder with: the settled device
    # an explicit device and batch size win over the rule
    assert SentenceEncoder(device="cpu", batch_size=8).batch_size == 8
    assert SpladeRetriever(device="cpu").device == "cpu"


def test_the_device_does_not_change_the_cache_key(monkeypatch):
    keys = {}
    for cuda in (False, True):
        monkeypatch.setattr(devices, "cuda_available", lambda cuda=cuda: cuda)
        keys[cuda] = (SentenceEncoder().fingerprint(), SpladeRetriever().fingerprint())
    assert keys[False] == keys[True]


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "CPU", ""])
def test_a_device_the_rule_does_not_know_is_refused(bad):
    with pytest.raises(BridgeError, match="auto, cpu, cuda or cuda:N"):
        devices.settle_device(bad)
    assert devices.settle_device("cuda:1") == "cuda:1"
    with pytest.raises(BridgeError, match="positive"):
        devices.batch_size_for("cpu", 0, 64, 256)


def test_two_cpus_sold_under_one_name_keep_apart_probe_files(tmp_path, monkeypatch):
    """An AVX2-only "AMD EPYC" must not read the bf16 choice an AVX-512 BF16 "AMD EPYC" measured into a shared cache."""
    monkeypatch.setattr(precision, "cpu_model", lambda: "AMD EPYC")
    files = {}
    for name, flags in {"avx512": ["avx2", "avx512f", "avx512_bf16", "fma"], "avx2": ["avx2", "fma"]}.items():
        monkeypatch.setattr(precision, "cpu_flags", lambda flags=flags: flags)
        files[name] = precision.probe_file(tmp_path)
    assert files["avx512"] != files["avx2"]
    assert files["avx512"].parent == files["avx2"].parent == tmp_path / "precision-probe"
