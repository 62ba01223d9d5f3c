"""The classifier's architecture: the encoder, masked mean pooling, a linear 5-way head.

all-MiniLM-L6-v2 was trained for sentence similarity on mean-pooled token states: that is where
"the FCA has formally backed the fund" and "the FCA approved this fund" lie close together. The
stock BertForSequenceClassification classifies the [CLS] token through a pooler the sentence
model never trained, so fine-tuning starts from a representation that knows nothing of
paraphrase. Mean pooling over the real tokens (the attention mask excludes padding, so a score
never depends on what else is in the batch) keeps the pretrained geometry under the head.

`load_classifier(path)` loads an artifact with the class its config names (older artifacts are
stock BertForSequenceClassification); torch + transformers only, no Django.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, BertModel, BertPreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

MEAN = "mean"
CLS = "cls"
POOLINGS = (MEAN, CLS)


class MeanPooledBertForSequenceClassification(BertPreTrainedModel):
    """BERT encoder -> mean of the token states under the attention mask -> dropout -> linear."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        self.dropout = torch.nn.Dropout(config.hidden_dropout_prob)
        self.classifier = torch.nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        token_type_ids=None,
        inputs_embeds=None,
        labels=None,
        output_attentions=None,
        output_hidden_states=None,
        **kwargs,
    ) -> SequenceClassifierOutput:
        outputs = self.bert(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            inputs_embeds=inputs_embeds,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            **kwargs,
        )
        states = outputs.last_hidden_state
        if attention_mask is None:
            mask = torch.ones(states.shape[:2], dtype=states.dtype, device=states.device)
        else:
            mask = attention_mask.to(states.dtype)
        pooled = (states * mask.unsqueeze(-1)).sum(dim=1) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)
        logits = self.classifier(self.dropout(pooled))
        loss = None
        if labels is not None:
            loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        return SequenceClassifierOutput(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )


_CLASSES = {MeanPooledBertForSequenceClassification.__name__: MeanPooledBertForSequenceClassification}


def classifier_class(path: str | Path, pooling: str | None = None):
    """The model class for an artifact or base encoder at `path`: the one its config names when
    that is a Claimwatch class, else by `pooling` (mean -> ours, cls -> transformers' stock one)."""
    config = AutoConfig.from_pretrained(path)
    named = (getattr(config, "architectures", None) or [None])[0]
    if named in _CLASSES:
        return _CLASSES[named]
    if pooling == MEAN:
        return MeanPooledBertForSequenceClassification
    return AutoModelForSequenceClassification


def load_classifier(path: str | Path, **kwargs):
    """An artifact's model, with the class its config names (see classifier_class)."""
    return classifier_class(path).from_pretrained(path, **kwargs)
