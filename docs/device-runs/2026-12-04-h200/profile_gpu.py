"""Where the Scorer's and the explanations' time goes on a GPU: the diagnostic run of 2026-12-04
on one H200 (profile-run2.txt). The base encoder with an untrained head (so no window is near a
decision threshold and nothing is re-checked in float32): the Scorer's host half (windows) and
model half (probabilities) timed alone, `score()` end to end, cProfile of both, and the
explanations' batched IG at two IG_TOKENS_PER_CALL budgets. Run from the repository root:
`python docs/device-runs/2026-12-04-h200/profile_gpu.py` (N messages of 64 tokens, M explained).
"""

import cProfile
import io
import os
import pstats
import sys
import time

import django

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compliance_site.settings")
django.setup()

import torch  # noqa: E402
from django.conf import settings  # noqa: E402
from transformers import AutoModelForSequenceClassification, AutoTokenizer  # noqa: E402

from explanations.bench import run_batched  # noqa: E402
from explanations.engine import MessageToExplain  # noqa: E402
from scoring.classifier.benchmark import _cut  # noqa: E402
from scoring.classifier.scorer import Scorer  # noqa: E402
from scoring.corpus.jsonl import read_jsonl  # noqa: E402

LABELS = ["no_claim", "guaranteed_returns", "risk_free", "performance_promise", "regulatory_endorsement"]


def table(profile: cProfile.Profile, rows: int = 18) -> str:
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(rows)
    return out.getvalue()[-4000:]


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(settings.BASE_MODEL_PATH)
    model = AutoModelForSequenceClassification.from_pretrained(
        settings.BASE_MODEL_PATH,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    scorer = Scorer.from_model(model, tokenizer, device=device, threshold=None, token_budget=131072)
    bodies = [r["body"] for r in read_jsonl(settings.CORPUS_PATH, validate=False) if r["split"] == "test"]
    n = int(os.environ.get("N", "65536"))
    texts = [_cut(tokenizer, f"{i}: {bodies[i % len(bodies)]}", 64) for i in range(n)]
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    scorer.score(texts[:2048])

    started = time.perf_counter()
    per_text = scorer.windows(texts)
    host = time.perf_counter() - started
    flat = [w.input_ids for windows in per_text for w in windows]
    sync(device)
    started = time.perf_counter()
    scorer.window_probabilities(flat)
    sync(device)
    probabilities = time.perf_counter() - started
    print(
        f"split: windows(texts) {n / host:.0f} msgs/s; window_probabilities {n / probabilities:.0f} msgs/s "
        f"({len(flat)} windows)"
    )
    started = time.perf_counter()
    scorer.score(texts)
    sync(device)
    print(
        f"score() end to end {n / (time.perf_counter() - started):.0f} msgs/s, precision "
        f"{scorer.precision}, rechecks {scorer.recheck_counts}"
    )
    profile = cProfile.Profile()
    profile.enable()
    scorer.score(texts)
    sync(device)
    profile.disable()
    print("=== score() profile")
    print(table(profile))

    m = int(os.environ.get("M", "64"))
    items = [MessageToExplain(body, 0.5) for body in bodies[:m]]
    budget = {"tokens_per_forward": 65536, "tokens_per_call": 16384}
    run_batched(scorer, items[:2], n_steps=32, batch_size=2, ig_budget=budget)  # warm-up
    for per_call in (16384, 65536):
        result = run_batched(
            scorer,
            items,
            n_steps=32,
            batch_size=128,
            ig_budget={"tokens_per_forward": 65536, "tokens_per_call": per_call},
        )
        sync(device)
        print(f"explain {m} msgs tokens_per_call {per_call}: {m / result.seconds:.1f} msgs/s")
    profile = cProfile.Profile()
    profile.enable()
    result = run_batched(scorer, items, n_steps=32, batch_size=128, ig_budget=budget)
    sync(device)
    profile.disable()
    print(f"=== explanations profile ({m / result.seconds:.1f} msgs/s)")
    print(table(profile, 25))


if __name__ == "__main__":
    main()
