"""Where an encoder runs: ``auto`` takes a CUDA device when torch sees one, else the CPU; batches follow the device.

The default install and CI are CPU-only (a ``+cpu`` torch wheel), so the CPU path stays the tested default; with a
CUDA build of torch and a GPU, the same pool files encode on the GPU in batches sized for it. The device changes no
cache key: it does not change what is computed beyond float rounding.
"""

from __future__ import annotations

from bridge.core.errors import BridgeError

AUTO = "auto"


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def settle_device(device: str) -> str:
    """``auto``: ``cuda`` where torch sees a CUDA device, else ``cpu``; ``cpu``, ``cuda`` and ``cuda:N`` as given."""
    if device == AUTO:
        return "cuda" if cuda_available() else "cpu"
    if device == "cpu" or device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        return device
    raise BridgeError(f"encoder device must be auto, cpu, cuda or cuda:N, got {device!r}")


def batch_size_for(device: str, given: int | None, cpu: int, gpu: int) -> int:
    """The batch size given, else the encoder's default for the (settled) device: small batches keep a 2-core CPU's
    working set in cache; a GPU needs large ones to fill its cores."""
    if given is not None:
        if given < 1:
            raise BridgeError(f"batch_size must be a positive integer, got {given}")
        return given
    return gpu if device.startswith("cuda") else cpu
