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


NEEDED = ("id", "body", "label", "claim_type", "split")


def read_rows(path: str | Path) -> list[dict]:
    """The corpus rows, read with the corpus package's reader. Only the fields the checks use
    are required (id, body, label, claim_type, split; rationales and slices when present), so
    a smaller hand-made corpus in the same format works too."""
    from scoring.corpus.generator import CorpusError, read_jsonl

    source = Path(path)
    if not source.is_file():
        raise CorpusUnavailable(f"the corpus {source} does not exist")
    try:
        rows = read_jsonl(source, validate=False)
    except (CorpusError, OSError) as exc:
        raise CorpusUnavailable(f"the corpus {source} cannot be read: {exc}") from exc
    for number, row in enumerate(rows, start=1):
        missing = [key for key in NEEDED if not isinstance(row, dict) or key not in row]
        if missing:
            raise CorpusUnavailable(f"row {number} of {source} lacks {', '.join(missing)}")
    return rows


def rationale_spans(row: dict) -> list[tuple[int, int]]:
    return [(int(s), int(e)) for s, e in row.get("rationales") or []]


def canary_ids(corpus_path: str | Path, rows: list[dict]) -> tuple[list[str], str]:
    """(ids, where they come from): canary.json beside the corpus, else the fallback rule. The
    source names files, never their server paths (it is shown on the faithfulness page)."""
    listed = Path(corpus_path).with_name(CANARY_FILE)
    where = f"{CANARY_FILE} beside {Path(corpus_path).name}"
    if listed.is_file():
        try:
            ids = json.loads(listed.read_text(encoding="utf-8"))["ids"]
        except (ValueError, KeyError, TypeError) as exc:
            raise CorpusUnavailable(f"{where} has no readable list of ids: {exc}") from exc
        known = {row["id"] for row in rows}
        missing = [i for i in ids if i not in known]
        if missing:
            raise CorpusUnavailable(f"{where} lists ids the corpus does not have: {missing[:5]}")
        return list(ids), where
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
