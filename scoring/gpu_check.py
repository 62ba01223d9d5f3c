"""The prepared device check (`manage.py gpu_check`): one command that a session lent a GPU runs
in a few minutes, and that CI runs on the CPU at toy sizes (the same steps, smaller).

Steps, each timed, each reported even when another failed:
1. device: its name, the driver, torch and its CUDA runtime, true (not emulated) bf16, the probe;
2. training: a short training on the device, a fixed small schedule (one epoch over a fixed
   subset of the corpus, the project's own training code), with its time;
3. agreement: the same messages scored by that model on the CPU in float32 and on the device in
   its own precision (bf16 on a bf16 GPU): flag and claim-type mismatches, the largest score
   difference, the share of windows re-checked in float32;
4. throughput: Scorer end to end (messages of 64 tokens) at the default settings and at the GPU
   profile, beside the bare encoder's bf16 forward rate on CUDA;
5. explanations: the pipeline's batched IG (+ faithfulness check) on the device in its precision
   against the same on the CPU in float32: verdict agreement, largest attribution difference,
   flagged messages explained per second;
6. worker: a real prefork worker on the device, in a throw-away database and broker (a temporary
   SQLite file and the filesystem transport, so nothing reaches a deployment's data), scoring and
   explaining ingested messages: statuses, explanation precisions, and any CUDA re-initialisation
   or out-of-memory line in its log.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from scoring.classifier.benchmark import _cut, gpu_bf16_msgs_per_s, scorer_timing
from scoring.classifier.device_check import probe
from scoring.classifier.precision import FLOAT32, native_bf16, resolve_precision
from scoring.classifier.scorer import Scorer
from scoring.corpus.jsonl import read_jsonl

# The GPU profile (docker-compose.yml x-gpu-profile, .env.example): budgets sized for a GPU.
GPU_PROFILE = {
    "TOKEN_BUDGET": 131072,
    "SCORING_BATCH_SIZE": 2048,
    "EXPLAIN_BATCH_SIZE": 128,
    "IG_TOKENS_PER_FORWARD": 65536,
    "IG_TOKENS_PER_CALL": 65536,
    "WORKER_TOKENIZERS_PARALLELISM": 1,
}
DEFAULT_IG_STEPS = 32  # the IG_N_STEPS default; toy runs use fewer and no refinement
LOG_ALARMS = ("re-initialize CUDA", "out of memory", "OutOfMemoryError", "CUDA error")


@dataclass(frozen=True)
class Sizes:
    """How much each step does: the GPU run's sizes, or toy ones on a CPU."""

    train_rows: int  # corpus rows per split the short training reads
    agreement_messages: int
    throughput_messages: int
    explain_messages: int
    worker_messages: int
    ig_steps: int


GPU_SIZES = Sizes(
    train_rows=4000,
    agreement_messages=1500,
    throughput_messages=65536,
    explain_messages=64,
    worker_messages=300,
    ig_steps=32,
)
CPU_SIZES = Sizes(
    train_rows=60,
    agreement_messages=40,
    throughput_messages=64,
    explain_messages=3,
    worker_messages=6,
    ig_steps=4,
)


def device_facts(device: torch.device) -> dict:
    report = probe(str(device)).as_dict()
    facts = {
        "device": str(device),
        "name": report["gpu_name"] or "CPU",
        "torch_version": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "true_bf16": native_bf16(device),
        "auto_precision": resolve_precision("auto", device),
        "probe": report,
    }
    if device.type == "cuda":
        facts["driver"] = _nvidia_smi("driver_version")
        facts["memory_gib"] = round(torch.cuda.get_device_properties(device).total_memory / 2**30, 1)
        facts["capability"] = ".".join(map(str, torch.cuda.get_device_capability(device)))
    else:
        from scoring.classifier.precision import cpu_model

        facts["driver"] = None
        facts["cpu_model"] = cpu_model()
    return facts


def _nvidia_smi(field: str) -> str | None:
    command = shutil.which("nvidia-smi")
    if not command:
        return None
    done = subprocess.run(  # noqa: S603 (fixed argv)
        [command, f"--query-gpu={field}", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else None


def subset_corpus(corpus_path: Path, out: Path, rows_per_split: int, seed: int = 0) -> Path:
    """A fixed subset of the corpus (the first `rows_per_split` of each split, in file order, both
    labels kept), so the short training reads the same data every time."""
    by_split: dict[str, list[dict]] = {}
    for row in read_jsonl(corpus_path, validate=False):
        by_split.setdefault(row["split"], []).append(row)
    picked = [row for rows in by_split.values() for row in rows[:rows_per_split]]
    random.Random(seed).shuffle(picked)
    out.write_text("".join(json.dumps(row) + "\n" for row in picked))
    return out


def short_training(config, *, device: torch.device, progress: bool) -> tuple[object, dict]:
    """Train with `config` (the project's training code) on `device`; returns the result and its
    figures."""
    from scoring.classifier.training import train

    started = time.perf_counter()
    result = train(replace(config, device=str(device)), progress=progress)
    seconds = time.perf_counter() - started
    training = result.metrics.get("training", {})
    return result, {
        "seconds": round(seconds, 1),
        "training_precision": result.manifest.get("training_precision"),
        "epochs": config.epochs,
        "train_seconds": training.get("train_seconds"),
        "train_messages": training.get("train_messages"),
        "train_examples_per_s": training.get("train_examples_per_s"),
        "threshold": round(float(result.threshold), 5),
        "schedule": f"{config.epochs} epoch, batch {config.batch_size}, lr {config.lr}, "
        f"freeze_layers {config.freeze_layers}, corpus subset {config.corpus_path}",
    }


def scorer_pair(result, *, device: torch.device, token_budget: int) -> tuple[Scorer, Scorer]:
    """The trained model as a float32 CPU Scorer and as a device Scorer in its own precision."""
    import copy

    options = {
        "labels": result.manifest.get("labels"),
        "threshold": result.threshold,
        "segmented": bool(result.manifest.get("segmentation")),
        "units": result.manifest.get("units", "windows"),
        "window_tokens": result.manifest.get("window_tokens", 128),
        "stride": result.manifest.get("window_stride", 64),
        "length_penalty": float(result.manifest.get("length_penalty", 0.0)),
    }
    cpu = Scorer.from_model(
        copy.deepcopy(result.model).cpu(), result.tokenizer, device="cpu", precision=FLOAT32, **options
    )
    on_device = Scorer.from_model(
        result.model, result.tokenizer, device=device, token_budget=token_budget, **options
    )
    return cpu, on_device


def agreement(cpu: Scorer, on_device: Scorer, texts: list[str]) -> dict:
    threshold = cpu.threshold
    on_device.recheck_counts.update({"windows": 0, "rechecked": 0})
    exact, fast = cpu.score(texts), on_device.score(texts)
    flags = [(a.score >= threshold) != (b.score >= threshold) for a, b in zip(exact, fast, strict=True)]
    types = [a.claim_type != b.claim_type for a, b in zip(exact, fast, strict=True) if a.score >= threshold]
    counts = on_device.recheck_counts
    return {
        "messages": len(texts),
        "device_precision": on_device.precision,
        "flagged_cpu": sum(a.score >= threshold for a in exact),
        "flag_mismatches": int(sum(flags)),
        "claim_type_mismatches_among_flagged": int(sum(types)),
        "max_abs_score_difference": float(
            max(abs(a.score - b.score) for a, b in zip(exact, fast, strict=True))
        ),
        "rechecked_window_share": round(counts["rechecked"] / counts["windows"], 4)
        if counts["windows"]
        else 0.0,
    }


def throughput(on_device: Scorer, bodies: list[str], n: int) -> dict:
    # numbered, so that no two texts share a window (the Scorer runs identical windows once)
    texts = [_cut(on_device.tokenizer, f"{i}: {bodies[i % len(bodies)]}", 64) for i in range(n)]
    texts = [t for t in texts if on_device.refusal_reason(t) is None]
    report: dict = {"messages": len(texts), "tokens_per_message": 64}
    for name, budget in (("default", 8192), ("gpu_profile", GPU_PROFILE["TOKEN_BUDGET"])):
        on_device.token_budget = budget
        # the profile's worker tokenises on every core (scoring.worker: WORKER_TOKENIZERS_PARALLELISM)
        with _tokenizers_parallelism(
            name == "gpu_profile" and bool(GPU_PROFILE["WORKER_TOKENIZERS_PARALLELISM"])
        ):
            scorer_timing(on_device, texts[: min(256, len(texts))])  # warm-up
            timing, _ = scorer_timing(on_device, texts)
            host, model = _scorer_sides(on_device, texts)
        report[f"scorer_msgs_per_s_{name}"] = round(timing.msgs_per_s, 1)
        # which side bounds the Scorer: its host work (segmenting and tokenising into windows)
        # and its model work (windows -> probabilities on the device), each timed alone
        report[f"host_windows_msgs_per_s_{name}"] = round(host, 1)
        report[f"model_msgs_per_s_{name}"] = round(model, 1)
        report[f"token_budget_{name}"] = budget
    if on_device.device.type == "cuda":
        report["gpu_bf16_64_token_msgs_per_s"] = round(gpu_bf16_msgs_per_s(on_device), 1)
    return report


def _scorer_sides(scorer: Scorer, texts: list[str]) -> tuple[float, float]:
    """Messages per second of the Scorer's two halves on these texts, each timed alone: cutting
    them into windows (host), and the windows' probabilities (device, synchronised)."""
    started = time.perf_counter()
    per_text = scorer.windows(texts)
    host = time.perf_counter() - started
    ids = [window.input_ids for windows in per_text for window in windows]
    _synchronize(scorer.device)
    started = time.perf_counter()
    scorer.window_probabilities(ids)
    _synchronize(scorer.device)
    model = time.perf_counter() - started
    return len(texts) / max(host, 1e-9), len(texts) / max(model, 1e-9)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextmanager
def _tokenizers_parallelism(on: bool):
    """TOKENIZERS_PARALLELISM for the duration (the Rust tokenizer reads it at each call)."""
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if on else "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = before


def explanations(cpu: Scorer, on_device: Scorer, bodies: list[str], n: int, n_steps: int) -> dict:
    from explanations.bench import run_batched
    from explanations.engine import MessageToExplain

    threshold = on_device.threshold
    flagged: list[str] = []
    for start in range(0, len(bodies), 64):  # the first n the model flags, in corpus order
        chunk = bodies[start : start + 64]
        flagged += [b for b, s in zip(chunk, on_device.claim_scores(chunk), strict=True) if s >= threshold]
        if len(flagged) >= n:
            break
    flagged = flagged[:n]
    if not flagged:
        return {"messages": 0, "note": "the short-trained model flags none of the messages"}
    items = [MessageToExplain(body, threshold) for body in flagged]
    budget = {
        "tokens_per_forward": GPU_PROFILE["IG_TOKENS_PER_FORWARD"],
        "tokens_per_call": GPU_PROFILE["IG_TOKENS_PER_CALL"],
    }
    run_batched(on_device, items[:1], n_steps=n_steps, batch_size=1, ig_budget=budget)  # warm-up
    fast = run_batched(
        on_device, items, n_steps=n_steps, batch_size=GPU_PROFILE["EXPLAIN_BATCH_SIZE"], ig_budget=budget
    )
    exact = run_batched(cpu, items, n_steps=n_steps, batch_size=32, precision=FLOAT32)
    pairs = list(zip(fast.word_scores, exact.word_scores, strict=True))
    return {
        "messages": len(items),
        "n_steps": n_steps,
        "ig_precision": resolve_precision("auto", on_device.device),
        "explained_msgs_per_s": round(len(items) / fast.seconds, 2),
        "cpu_float32_msgs_per_s": round(len(items) / exact.seconds, 2),
        "same_verdict_rate": float(
            np.mean([a.passed == b.passed for a, b in zip(fast.checks, exact.checks, strict=True)])
        ),
        "max_abs_attribution_difference": float(max(float(np.max(np.abs(a - b))) for a, b in pairs)),
    }


def worker_run(
    artifact: Path, *, device: torch.device, sizes: Sizes, profile: bool, workdir: Path, timeout: float
) -> dict:
    """Step 6 in a child process on a throw-away database and broker (module docstring)."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{workdir / 'gpu-check.sqlite3'}",
        "CLAIMWATCH_VAR_DIR": str(workdir),
        "CLAIMWATCH_BROKER_DIR": str(workdir / "broker"),
        "CELERY_BROKER_URL": "filesystem://",
        "MODELS_DIR": str(artifact.parent),
        "SCORING_DEVICE": str(device),
        "CANARY_ON_ACTIVATION": "0",
        "FAITHFULNESS_REPORT_SAMPLE": "0",
        "QA_SAMPLE_RATE": "0",
        "IG_N_STEPS": str(sizes.ig_steps),
        **({"IG_REFINE_DOUBLINGS": "0"} if sizes.ig_steps < DEFAULT_IG_STEPS else {}),
        **({k: str(v) for k, v in GPU_PROFILE.items()} if profile else {}),
    }
    from django.conf import settings

    command = [sys.executable, "manage.py", "gpu_check", "--worker-step", str(artifact)]
    command += ["--worker-messages", str(sizes.worker_messages), "--worker-timeout", str(timeout)]

    done = subprocess.run(  # noqa: S603 (our own command, argv list)
        command,
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 300,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"the worker step exited {done.returncode}: {(done.stderr or done.stdout)[-2000:]}"
        )
    return json.loads(lines[-1])


def run_step(name: str, report: dict, fn: Callable[[], dict]) -> object:
    started = time.perf_counter()
    try:
        result = fn()
        report[name] = {**result, "ok": True} if isinstance(result, dict) else {"ok": True}
        return result
    except Exception as exc:
        report[name] = {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "trace": traceback.format_exc()[-3000:],
        }
        return None
    finally:
        report[name]["step_seconds"] = round(time.perf_counter() - started, 1)
        # progress: each step's figures as soon as it ends, so a run cut short still tells them
        print(json.dumps({name: report[name]}, sort_keys=True, default=str), file=sys.stderr, flush=True)


def temporary_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="claimwatch-gpu-check-"))
