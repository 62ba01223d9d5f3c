"""MeanPooledBertForSequenceClassification: BERT, the masked mean of its token states, a linear
head (why: scoring.classifier.modeling). A module of its own because importing transformers'
BertModel builds its activation modules: scoring code imports scoring.classifier.modeling, which
loads this only when a model is built or loaded (Celery forks workers from a parent that must
hold no torch module)."""

from __future__ import annotations

import torch
from transformers import BertModel, BertPreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput


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
