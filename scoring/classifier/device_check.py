"""Whether a worker can compute on the device it is configured for, and what torch sees there.
torch only; no Django.

`SCORING_DEVICE=cuda` on a host without a usable GPU (no driver, a driver older than the CUDA
runtime of the torch wheel, a GPU another process has wedged) must not fail messages: a worker
that cannot use its device refuses to consume and leaves the work queued for one that can
(scoring.worker). `probe` asks for real: it resolves the device and runs one small matrix product
on it, so a driver that torch can list but not use is found too.

`probe_in_subprocess` runs the same probe in a fresh interpreter. The Celery parent process uses
it: CUDA initialised in a process cannot cross a fork, so the parent, which forks the pool's
children, must never touch it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from scoring.errors import ModelNotReady


def resolve_device(name: str) -> torch.device:
    """auto -> cuda when available else cpu; cuda without a GPU is a clear error."""
    choice = (name or "auto").strip().lower()
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if choice == "cpu":
        return torch.device("cpu")
    if choice.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ModelNotReady(f"Device {name!r} was asked for but no CUDA GPU is available.")
        return torch.device(choice)
    raise ValueError(f"Unknown device {name!r}: use auto, cpu or cuda.")


@dataclass(frozen=True)
class DeviceReport:
    requested: str
    device: str | None  # the resolved device ("cpu", "cuda:0"), None when it cannot be resolved
    usable: bool
    reason: str  # why it is not usable; "" when it is
    torch_version: str
    cuda_version: str | None  # the CUDA runtime torch was built with (None: a CPU build)
    cuda_available: bool
    device_count: int
    gpu_name: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        where = self.gpu_name or self.device or self.requested
        state = "usable" if self.usable else f"NOT usable ({self.reason})"
        return (
            f"device {self.requested!r} -> {where}: {state}; torch {self.torch_version}, "
            f"CUDA runtime {self.cuda_version or 'none (CPU build)'}, "
            f"cuda.is_available()={self.cuda_available}, {self.device_count} GPU(s) visible"
        )


def is_device_failure(exc: BaseException) -> bool:
    """Whether `exc` says the accelerator failed (rather than the input): torch's
    AcceleratorError, or a RuntimeError from CUDA, cuBLAS or cuDNN. Out of memory is not one: it
    is handled by making the work smaller (scoring.classifier.scorer)."""
    if isinstance(exc, torch.OutOfMemoryError):
        return False
    accelerator_error = getattr(torch, "AcceleratorError", None)
    if accelerator_error is not None and isinstance(exc, accelerator_error):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(
        marker in text
        for marker in ("CUDA error", "CUBLAS_STATUS", "cuDNN error", "CUDNN_STATUS", "device-side assert")
    )


def cpu_report() -> DeviceReport:
    """The CPU's report without asking torch anything about CUDA (the Celery parent may not)."""
    return DeviceReport("cpu", "cpu", True, "", torch.__version__, torch.version.cuda, False, 0)


def _torch_facts() -> dict:
    try:
        available = bool(torch.cuda.is_available())
        count = int(torch.cuda.device_count()) if available else 0
    except Exception:  # a broken driver can raise from the query itself
        available, count = False, 0
    return {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cuda_available": available,
        "device_count": count,
    }


def probe(requested: str) -> DeviceReport:
    """Resolve `requested` (auto | cpu | cuda[:N]) and compute on it once."""
    facts = _torch_facts()
    try:
        device = resolve_device(requested)
    except Exception as exc:
        return DeviceReport(requested, None, False, str(exc), **facts)
    try:
        x = torch.ones(8, 8, device=device)
        value = float((x @ x).sum().item())
        if value != 512.0:
            raise RuntimeError(f"a test product on {device} gave {value}, not 512")
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    except Exception as exc:
        return DeviceReport(requested, str(device), False, f"{type(exc).__name__}: {exc}", **facts)
    return DeviceReport(requested, str(device), True, "", **facts, gpu_name=name)


def probe_in_subprocess(requested: str, *, timeout: float = 180.0) -> DeviceReport:
    """`probe` in a fresh interpreter (this process's CUDA state is left untouched)."""
    command = [sys.executable, "-m", "scoring.classifier.device_check", requested]
    root = str(Path(__file__).resolve().parents[2])  # the project, whatever the worker's cwd
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    try:
        done = subprocess.run(  # noqa: S603 (our own module, argv list)
            command, capture_output=True, text=True, timeout=timeout, check=False, cwd=root, env=env
        )
        return DeviceReport(**json.loads(done.stdout.strip().splitlines()[-1]))
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError, TypeError) as exc:
        detail = getattr(exc, "stderr", None) or ""
        return DeviceReport(
            requested,
            None,
            False,
            f"the device probe did not answer: {type(exc).__name__}: {exc} {str(detail)[-500:]}".strip(),
            torch_version=torch.__version__,
            cuda_version=torch.version.cuda,
            cuda_available=False,
            device_count=0,
        )


if __name__ == "__main__":  # python -m scoring.classifier.device_check DEVICE
    print(json.dumps(probe(sys.argv[1] if len(sys.argv) > 1 else "auto").as_dict()))
