"""The labelled corpus of regulated claims: public API of the deterministic generator.

Pure Python (no Django). Everything is drawn from `random.Random` instances seeded from the
seed and a fixed name per part, never from the global random state, hashing or set order, so
one seed gives the same bytes on any machine.

    rows = generate_corpus()                   # list of row dicts (see schema.py)
    write_jsonl(rows, path); read_jsonl(path); corpus_sha256(path)
    canary_ids(rows)                           # the fixed canary set (also canary.json)
    generate_drift_messages(seed=1, n=200, claim_types=["risk_free"])
    generate_traffic_messages(seed=1, n=1000, claim_rate=0.05)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from scoring.corpus.jsonl import (
    atomic_write_bytes,
    corpus_sha256,
    read_jsonl,
    rows_bytes,
    validate_rows,
    write_jsonl,
)
from scoring.corpus.plan import DEFAULT_SEED, canary_ids, corpus_plan, generate_corpus, planned_size
from scoring.corpus.schema import CorpusError
from scoring.corpus.stats import count_table, replace_block
from scoring.corpus.streams import generate_drift_messages, generate_traffic_messages

__all__ = [
    "CANARY_PATH",
    "CORPUS_PATH",
    "DATASHEET_PATH",
    "DEFAULT_SEED",
    "CorpusError",
    "CorpusFiles",
    "canary_document",
    "canary_ids",
    "check_corpus_files",
    "corpus_plan",
    "corpus_sha256",
    "generate_corpus",
    "generate_drift_messages",
    "generate_traffic_messages",
    "load_canary_ids",
    "planned_size",
    "read_jsonl",
    "write_corpus_files",
    "write_jsonl",
]

CORPUS_DIR = Path(__file__).resolve().parent
CORPUS_PATH = CORPUS_DIR / "claims.jsonl"
CANARY_PATH = CORPUS_DIR / "canary.json"
DATASHEET_PATH = CORPUS_DIR / "DATASHEET.md"


def canary_document(rows: list[dict], *, corpus_name: str, corpus_sha: str) -> dict:
    """What canary.json holds: the ids, by claim type, tied to the corpus file's sha256."""
    ids = canary_ids(rows)
    by_id = {row["id"]: row for row in rows}
    by_type: dict[str, list[str]] = {}
    for row_id in ids:
        by_type.setdefault(by_id[row_id]["claim_type"], []).append(row_id)
    return {
        "corpus": corpus_name,
        "corpus_sha256": corpus_sha,
        "selection": "10 test-split claims per claim type: 4 standard, 2 informal, 2 split_sentence, "
        "2 padded; never novel_phrasing; every rationale's text occurs once in its body",
        "ids": ids,
        "by_claim_type": dict(sorted(by_type.items())),
    }


def _canary_bytes(rows: list[dict], corpus_name: str, corpus_data: bytes) -> bytes:
    document = canary_document(
        rows, corpus_name=corpus_name, corpus_sha=hashlib.sha256(corpus_data).hexdigest()
    )
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def load_canary_ids(path: str | Path = CANARY_PATH) -> list[str]:
    """The canary ids recorded in canary.json."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CorpusError(f"{path} does not exist; run `python manage.py generate_corpus`") from exc
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path} is not valid JSON ({exc.msg})") from exc
    ids = document.get("ids") if isinstance(document, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise CorpusError(f"{path} has no list of canary ids")
    return ids


@dataclass(frozen=True)
class CorpusFiles:
    """Where the corpus, its canary list and (for the committed corpus) the datasheet live."""

    corpus: Path
    canary: Path
    datasheet: Path | None

    @classmethod
    def at(cls, out: str | Path | None = None) -> CorpusFiles:
        """The committed files, or `out` with canary.json beside it (and no datasheet)."""
        if out is None or Path(out).resolve() == CORPUS_PATH:
            return cls(CORPUS_PATH, CANARY_PATH, DATASHEET_PATH)
        corpus = Path(out)
        return cls(corpus, corpus.with_name("canary.json"), None)


def _expected(rows: list[dict], files: CorpusFiles) -> dict[Path, bytes]:
    validate_rows(rows, allow_extra_splits=False)
    corpus_data = rows_bytes(rows)
    expected = {
        files.corpus: corpus_data,
        files.canary: _canary_bytes(rows, files.corpus.name, corpus_data),
    }
    if files.datasheet is not None:
        text = _read_text(files.datasheet)
        expected[files.datasheet] = replace_block(text, count_table(rows)).encode("utf-8")
    return expected


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise CorpusError(f"{path} does not exist") from exc


def write_corpus_files(rows: list[dict], files: CorpusFiles) -> dict[str, str]:
    """Write the JSONL, canary.json and the datasheet's count tables. Everything is computed
    and checked before the first byte is written; each file is replaced atomically.
    Returns {path: sha256}."""
    expected = _expected(rows, files)
    for path in expected:
        if not path.parent.is_dir():
            raise CorpusError(f"directory {path.parent} does not exist")
    for path, data in expected.items():
        atomic_write_bytes(path, data)
    return {str(path): hashlib.sha256(data).hexdigest() for path, data in expected.items()}


def check_corpus_files(rows: list[dict], files: CorpusFiles) -> list[str]:
    """How the files on disk differ from what `rows` would write (empty when identical)."""
    problems = []
    for path, data in _expected(rows, files).items():
        if not path.exists():
            problems.append(f"{path} does not exist")
            continue
        actual = path.read_bytes()
        if actual == data:
            continue
        if path == files.datasheet:
            problems.append(f"{path}: the count tables are stale")
            continue
        problems.append(f"{path} differs from a fresh generation: {_first_difference(actual, data)}")
    return problems


def _first_difference(actual: bytes, expected: bytes) -> str:
    old = actual.decode("utf-8", errors="replace").splitlines()
    new = expected.decode("utf-8", errors="replace").splitlines()
    for number, (a, b) in enumerate(zip(old, new, strict=False), start=1):
        if a != b:
            return f"first at line {number} ({b[:60]!r}...)"
    return f"{len(old)} lines on disk, {len(new)} generated"
