"""Write the labelled corpus (JSONL, canary.json, datasheet tables), or check it is current."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from scoring.corpus.generator import (
    DEFAULT_SEED,
    CorpusError,
    CorpusFiles,
    check_corpus_files,
    generate_corpus,
    planned_size,
    write_corpus_files,
)


class Command(BaseCommand):
    help = (
        "Generate the synthetic labelled corpus of regulated claims. Without --out it rewrites "
        "scoring/corpus/claims.jsonl, canary.json and the DATASHEET count tables; with --out it "
        "writes that JSONL file and canary.json beside it. --check writes nothing and fails if "
        "the files differ from a fresh generation."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", default=None, help="JSONL path (default: the committed corpus).")
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default {DEFAULT_SEED}")
        parser.add_argument("--check", action="store_true", help="compare, do not write")

    def handle(self, *args, out=None, seed=DEFAULT_SEED, check=False, **options):
        files = CorpusFiles.at(out)
        try:
            with tqdm(total=planned_size(), desc="generating corpus", unit="row", disable=None) as bar:
                rows = generate_corpus(seed, progress=bar.update)
            if check:
                problems = check_corpus_files(rows, files)
                if problems:
                    raise CommandError(
                        "The corpus files are not what the generator produces (seed "
                        f"{seed}):\n  " + "\n  ".join(problems) + "\nRun `python manage.py generate_corpus`"
                        " to regenerate them, and commit the result."
                    )
                self.stdout.write(f"OK: {files.corpus} ({len(rows)} rows) matches a fresh generation.")
                return
            written = write_corpus_files(rows, files)
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        for path, sha in written.items():
            self.stdout.write(f"wrote {path} (sha256 {sha})")
        claims = sum(row["label"] for row in rows)
        self.stdout.write(f"{len(rows)} rows, {claims} claims, {len(rows) - claims} negatives.")
