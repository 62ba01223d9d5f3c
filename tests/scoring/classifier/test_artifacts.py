"""save_artifact writes an artifact every worker of the app's group can read, whatever the umask
of the process that trained it."""

from __future__ import annotations

import os
import stat

from transformers import AutoModelForSequenceClassification, AutoTokenizer

from scoring.classifier.artifacts import artifact_sha256, save_artifact


def test_an_artifact_saved_under_a_strict_umask_is_group_readable(tiny_encoder_dir, tmp_path):
    # given: a model and tokenizer, and a process umask that grants the group nothing
    model = AutoModelForSequenceClassification.from_pretrained(tiny_encoder_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_encoder_dir)
    target = tmp_path / "models" / "v-test"
    previous = os.umask(0o077)
    try:
        # when
        sha256 = save_artifact(
            target, model=model, tokenizer=tokenizer, manifest={"version": "v-test"}, metrics={}, eval_rows=[]
        )
    finally:
        os.umask(previous)

    # then: every file is g+r and every folder g+rx, the models folder it created included
    paths = [target.parent, target, *target.rglob("*")]
    assert any(p.name == "model.safetensors" for p in paths)
    for path in paths:
        mode = stat.S_IMODE(path.stat().st_mode)
        wanted = stat.S_IRGRP | stat.S_IXGRP if path.is_dir() else stat.S_IRGRP
        assert mode & wanted == wanted, f"{path.relative_to(tmp_path)} has mode {oct(mode)}"
    assert artifact_sha256(target) == sha256
