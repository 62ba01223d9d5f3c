"""The labelled corpus as the explanation checks use it: rows with rationale spans, and the fixed
canary set. Pure: no Django (callers pass paths from settings).

The canary set is the id list in canary.json beside the corpus (written by the corpus
generator). Without that file, the one fallback rule below picks it from the corpus itself, so the
set is still fixed for a given corpus: CANARIES_PER_TYPE test-split claims per claim type, never
novel phrasing, the lowest ids first.
"""

from __future__ import annotations

import json
from pathlib import Path

CANARY_FILE = "canary.json"
CANARIES_PER_TYPE = 10
NOVEL = "novel_phrasing"


class CorpusUnavailable(Exception):
    """The corpus or the canary list cannot be read, with the reason."""


def read_rows(path: str | Path) -> list[dict]:
    """The corpus rows (the corpus package's reader when it is installed, else plain JSONL)."""
    source = Path(path)
    if not source.is_file():
        raise CorpusUnavailable(f"the corpus {source} does not exist")
    try:
        from scoring.corpus.generator import read_jsonl
    except ImportError:
        read_jsonl = None
    try:
        if read_jsonl is not None:
            return read_jsonl(source)
        return [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (ValueError, OSError) as exc:
        raise CorpusUnavailable(f"the corpus {source} cannot be read: {exc}") from exc
    except Exception as exc:  # the corpus package's own CorpusError
        raise CorpusUnavailable(str(exc)) from exc


def rationale_spans(row: dict) -> list[tuple[int, int]]:
    return [(int(s), int(e)) for s, e in row.get("rationales") or []]


def canary_ids(corpus_path: str | Path, rows: list[dict]) -> tuple[list[str], str]:
    """(ids, where they come from): canary.json beside the corpus, else the fallback rule."""
    listed = Path(corpus_path).with_name(CANARY_FILE)
    if listed.is_file():
        try:
            ids = json.loads(listed.read_text(encoding="utf-8"))["ids"]
        except (ValueError, KeyError, TypeError) as exc:
            raise CorpusUnavailable(f"{listed} has no readable list of ids: {exc}") from exc
        known = {row["id"] for row in rows}
        missing = [i for i in ids if i not in known]
        if missing:
            raise CorpusUnavailable(f"{listed} lists ids the corpus does not have: {missing[:5]}")
        return list(ids), str(listed)
    picked: list[str] = []
    by_type: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("split") == "test" and row.get("label") == 1 and NOVEL not in row.get("slices", []):
            by_type.setdefault(row["claim_type"], []).append(row)
    for claim_type in sorted(by_type):
        picked += [r["id"] for r in sorted(by_type[claim_type], key=lambda r: r["id"])[:CANARIES_PER_TYPE]]
    if not picked:
        raise CorpusUnavailable("the corpus has no test-split claims to use as canaries")
    rule = f"{CANARIES_PER_TYPE} lowest-id test-split claims per claim type, no novel phrasing"
    return picked, rule
