"""The number format of the model's matrix products: float32, or bfloat16 where the hardware
computes it natively. One definition for the Scorer (scoring.classifier.scorer) and for the
Integrated Gradients of explanations.attribution. torch only; no Django.

"auto" resolves to bfloat16 on a device with bf16 matrix units (a CUDA GPU that computes bf16
natively: Ampere or newer; a CPU with AVX512-BF16 or AMX instructions) and to float32 elsewhere.
Emulation does not count: a T4 or V100 "supports" bf16 only by emulating it (torch's
`is_bf16_supported()` says yes there unless asked `including_emulation=False`), and a CPU with
plain AVX-512 but no bf16 instructions has oneDNN emulate it; both are slower than float32.
Training (scoring.classifier.training) and serving choose through the same `resolve_precision`.
bfloat16 runs under torch.autocast (matrix products in bf16; softmax, layer norm and the loss in
float32), with the weights kept in float32, so the same model serves both formats.
"""

from __future__ import annotations

import contextlib
import platform
from pathlib import Path

import torch

FLOAT32, BFLOAT16, AUTO = "float32", "bfloat16", "auto"
PRECISIONS = (AUTO, FLOAT32, BFLOAT16)


def _cpu_has_bf16_instructions() -> bool:
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    try:
        return any(getattr(torch.cpu, name)() for name in checks if hasattr(torch.cpu, name))
    except RuntimeError:
        return False


def native_bf16(device) -> bool:
    """Whether `device` computes bf16 matrix products natively (see the module docstring)."""
    device = torch.device(device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return False
        with torch.cuda.device(device):
            return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    if device.type == "cpu":
        return _cpu_has_bf16_instructions()
    return False


def resolve_precision(precision: str, device) -> str:
    """ "float32" or "bfloat16" on `device`; "auto" as the module docstring says."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == AUTO:
        return BFLOAT16 if native_bf16(device) else FLOAT32
    return precision


def autocast(device, precision: str):
    """The context a forward pass runs in for a resolved `precision` on `device`."""
    if precision == FLOAT32:
        return contextlib.nullcontext()
    if precision == BFLOAT16:
        return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)
    raise ValueError(f"precision must be resolved to {FLOAT32} or {BFLOAT16}, not {precision!r}")


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def hardware(device) -> dict:
    """What a benchmark figure was measured on: the device, the CPU, its widest vector
    instructions torch uses (e.g. AVX2, AVX512), whether the device has bf16 matrix units, what
    "auto" resolves to there, torch's threads, and the GPU's name on CUDA. Figures of the same
    command differ between a CPU with bf16 units and one without by a factor of two or more."""
    device = torch.device(device)
    report = {
        "device": str(device),
        "cpu_model": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "native_bf16": native_bf16(device),
        "auto_precision": resolve_precision(AUTO, device),
        "torch_threads": torch.get_num_threads(),
    }
    if device.type == "cuda":
        report["gpu_name"] = torch.cuda.get_device_name(device)
    return report
