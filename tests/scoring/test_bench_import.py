"""bench_import on a small generated mbox: its JSON report, its peak RSS per kind of process, and
nothing kept (the import is rolled back). Timings are not asserted: they belong to the benchmark."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from scoring.models import Conversation, Message

pytestmark = pytest.mark.django_db

KEYS = {
    "n",
    "kinds",
    "created",
    "errors",
    "import_seconds",
    "messages_per_s",
    "import_cpu_seconds",
    "import_cpu_seconds_children",
    "messages_per_cpu_s",
    "parse_only_messages_per_s",
    "target_messages_per_s",
    "meets_target",
    "peak_rss_mb_self",
    "peak_rss_mb_self_before_import",
    "peak_rss_mb_parse_process",
    "peak_rss_mb_children_rusage",
    "peak_rss_mb_children_rusage_before_import",
    "peak_rss_mb_total_bound",
    "parse_processes",
    "database",
    "cpu_model",
    "cpus",
}


def bench(*args: str) -> dict:
    out = io.StringIO()
    call_command("bench_import", *args, stdout=out)
    return json.loads(out.getvalue())


def test_bench_import_reports_every_key_imports_all_messages_without_error_and_keeps_nothing():
    result = bench("--n", "30", "--json")

    assert set(result) >= KEYS, KEYS - set(result)
    assert result["n"] == 30 and result["created"] == 30 and result["errors"] == 0
    assert sum(result["kinds"].values()) == 30
    assert result["parse_processes"] == 1  # 30 messages are parsed in the importing process
    assert result["peak_rss_mb_self"] >= result["peak_rss_mb_self_before_import"] > 0
    assert result["peak_rss_mb_parse_process"] is None
    assert result["peak_rss_mb_total_bound"] == result["peak_rss_mb_self"]
    assert not Message.objects.exists() and not Conversation.objects.exists()  # rolled back


def test_bench_import_counts_the_parse_processes_in_peak_rss_and_cpu(settings):
    settings.IMPORT_PARALLEL_FROM = 10
    settings.IMPORT_PARSE_PROCESSES = 2

    result = bench("--n", "30", "--json")

    assert result["errors"] == 0 and result["created"] == 30 and result["parse_processes"] == 2
    # each parse process's own peak: a fresh interpreter with the mail parser, tens of MB
    assert 5 < result["peak_rss_mb_parse_process"] < result["peak_rss_mb_self"]
    # the kernel's figure for spawned children is reported apart (it counts pages shared at fork)
    assert result["peak_rss_mb_children_rusage"] > 0
    assert result["import_cpu_seconds_children"] > 0
    assert result["peak_rss_mb_total_bound"] == pytest.approx(
        result["peak_rss_mb_self"] + 2 * result["peak_rss_mb_parse_process"], abs=0.2
    )


def test_bench_import_says_in_words_which_process_each_peak_rss_is():
    out = io.StringIO()
    call_command("bench_import", "--n", "12", stdout=out)

    text = out.getvalue()
    assert "peak RSS: importing process" in text and "no parse processes measured" in text
    assert "errors 0" in text
