import random

import pytest
import torch

from scoring.classifier.contrastive import contrastive_stage, draw_pairs, embed
from scoring.classifier.data import Example
from scoring.classifier.training import TrainConfig, parameter_groups, train
from tests.support.models import tiny_train_config

CLAIM = (101, 7, 8, 102)
OTHER_CLAIM = (101, 7, 9, 102)
NEUTRAL = (101, 3, 4, 102)
OTHER_NEUTRAL = (101, 3, 5, 102)


def test_pairs_alternate_same_and_different_class_and_leave_bags_out():
    examples = [
        Example((CLAIM,), 1),
        Example((OTHER_CLAIM,), 1),
        Example((NEUTRAL,), 0),
        Example((OTHER_NEUTRAL,), 0),
        Example((CLAIM, NEUTRAL), 2),  # a bag: no single unit
    ]

    pairs = draw_pairs(examples, 9, random.Random(0))

    assert len(pairs) == 9
    assert [p.similar for p in pairs] == [1.0, 0.0] * 4 + [1.0]
    labels = {CLAIM: 1, OTHER_CLAIM: 1, NEUTRAL: 0, OTHER_NEUTRAL: 0}
    for pair in pairs:
        assert (labels[pair.first] == labels[pair.second]) == (pair.similar == 1.0)
    assert draw_pairs(examples, 9, random.Random(0)) == pairs


@pytest.mark.parametrize(
    "examples, n",
    [([Example((CLAIM,), 1), Example((OTHER_CLAIM,), 1)], 4), ([Example((CLAIM,), 1)], 0), ([], 3)],
)
def test_nothing_to_contrast_gives_no_pairs(examples, n):
    assert draw_pairs(examples, n, random.Random(0)) == []


def test_the_stage_pulls_same_class_windows_together_and_pushes_others_apart(tiny_training_inputs):
    # given the tiny encoder and two windows of each of two classes
    from scoring.classifier.training import load_base

    base, _ = tiny_training_inputs
    model, tokenizer = load_base(str(base))
    ids = [
        tuple(tokenizer(text)["input_ids"])
        for text in (
            "returns are guaranteed",
            "the fund is guaranteed",
            "lunch is at noon",
            "the train is late",
        )
    ]
    examples = [Example((ids[0],), 1), Example((ids[1],), 1), Example((ids[2],), 0), Example((ids[3],), 0)]
    config = TrainConfig(base_model=str(base), corpus_path="-", lr=1e-2, freeze_layers=0)

    def separation():
        with torch.no_grad():
            vectors = torch.nn.functional.normalize(embed(model.eval(), ids, "cpu", 0), dim=-1)
        similarity = vectors @ vectors.T
        return float(similarity[0, 1] + similarity[2, 3] - similarity[0, 2] - similarity[1, 3])

    before = separation()

    # when
    report = contrastive_stage(
        model,
        draw_pairs(examples, 256, random.Random(0)),
        parameter_groups=parameter_groups(model, config),
        device="cpu",
        pad_id=0,
        precision="float32",
        batch_size=8,
        warmup_ratio=0.0,
        progress=False,
    )

    # then
    assert separation() > before + 1.0
    assert report["pairs"] == 256 and report["positive_pairs"] == 128 and report["steps"] == 32
    assert report["loss_last_tenth"] < report["loss_first_tenth"]


def test_training_with_the_stage_records_it_and_trains_a_different_model(tiny_training_inputs):
    base, corpus = tiny_training_inputs
    plain = train(tiny_train_config(base, corpus, epochs=1), progress=False)

    contrasted = train(
        tiny_train_config(base, corpus, epochs=1, contrastive_pairs=40, contrastive_lr=1e-3), progress=False
    )

    stage = contrasted.metrics["training"]["contrastive_stage"]
    assert stage["pairs"] == 40 and stage["steps"] == 5
    assert plain.metrics["training"]["contrastive_stage"] is None
    assert contrasted.manifest["hyperparameters"]["contrastive_pairs"] == 40
    assert [r["score"] for r in contrasted.eval_rows] != pytest.approx(
        [r["score"] for r in plain.eval_rows], abs=1e-6
    )


@pytest.mark.parametrize("bad", [{"contrastive_pairs": -1}, {"contrastive_lr": 0}])
def test_nonsense_contrastive_settings_are_refused(bad):
    with pytest.raises(ValueError):
        TrainConfig(base_model="x", corpus_path="y", **bad)
