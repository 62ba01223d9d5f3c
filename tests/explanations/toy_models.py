"""A classifier whose answer is known: it reads one word and nothing else.

`OneWordClassifier` has the interface the Scorer and the attribution code use (a Hugging Face
sequence classifier's: `config`, `get_input_embeddings()`, `forward(input_ids, attention_mask)`
returning `.logits` over the five classes). Its word embedding is 1 for the chosen token and 0
for every other token, so its claim logit is gain x (how often that token occurs) - bias: the
claim probability is ~0.98 with the word and ~0.02 without it, whatever else the text says."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from django.conf import settings
from torch import nn
from transformers import AutoTokenizer

from scoring.classifier.scorer import Scorer
from scoring.constants import CLASS_LABELS


class OneWordClassifier(nn.Module):
    def __init__(self, token_id: int, vocab_size: int, *, gain: float = 8.0, bias: float = 4.0) -> None:
        super().__init__()
        self.config = SimpleNamespace(
            num_labels=len(CLASS_LABELS),
            max_position_embeddings=512,
            id2label=dict(enumerate(CLASS_LABELS)),
            _attn_implementation="eager",
        )
        self.embeddings = nn.Embedding(vocab_size, 1)
        with torch.no_grad():
            self.embeddings.weight.zero_()
            self.embeddings.weight[token_id, 0] = 1.0
        self.gain, self.bias = gain, bias

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def forward(self, input_ids, attention_mask=None, **_):
        reading = self.embeddings(input_ids)[..., 0]
        if attention_mask is not None:
            reading = reading * attention_mask
        claim = self.gain * reading.sum(dim=-1) - self.bias
        others = torch.full_like(claim, -30.0)
        logits = torch.stack([torch.zeros_like(claim), claim, others, others, others], dim=-1)
        return SimpleNamespace(logits=logits)


def one_word_scorer(word: str = "guaranteed", **window) -> Scorer:
    """A CPU Scorer over OneWordClassifier with the packaged MiniLM tokenizer."""
    tokenizer = AutoTokenizer.from_pretrained(settings.BASE_MODEL_PATH)
    token_id = tokenizer.convert_tokens_to_ids(word)
    if token_id == tokenizer.unk_token_id:
        raise ValueError(f"{word!r} is not one token of the vocabulary")
    model = OneWordClassifier(token_id, tokenizer.vocab_size)
    return Scorer.from_model(model, tokenizer, labels=CLASS_LABELS, device="cpu", threshold=0.5, **window)
