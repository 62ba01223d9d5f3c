"""Training only the upper encoder layers, with the frozen lower layers computed once.

When the embeddings and the lowest k encoder layers are frozen (TrainConfig.freeze_layers), their
output for a window never changes during training: it is computed once per distinct window, in
eval mode, and the upper layers are trained on it, epoch after epoch. On a 2-core CPU this halves
the cost of an epoch with k = 3 of MiniLM's 6 layers (forward and backward through 3 layers
instead of a forward through 6 and a backward through 3), and is what lets a corpus of realistic
email fit the training budget.

How the upper layers run on cached inputs, with transformers' own forward (masks, pooler, head):
`upper_layers(model, k)` swaps the embedding block for a pass-through that returns
`inputs_embeds` as given, and the encoder's layer list for its layers k.., for the duration of a
`with` block; `model(inputs_embeds=cached, attention_mask=mask)` then runs layers k.. and the
head. Outside the block the model is the whole model again (evaluation, saving).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch

from scoring.classifier.windows import length_sorted_batches


class _PassThrough(torch.nn.Module):
    """Stands in for the embedding block: the cached hidden states are the 'embeddings'."""

    def forward(self, input_ids=None, inputs_embeds=None, **kwargs):
        return inputs_embeds


def _encoder(model):
    base = getattr(model, model.base_model_prefix)
    return base, base.encoder


@contextlib.contextmanager
def _layers(model, layers: torch.nn.ModuleList, embeddings: torch.nn.Module) -> Iterator[None]:
    base, encoder = _encoder(model)
    saved_layers, saved_embeddings = encoder.layer, base.embeddings
    encoder.layer, base.embeddings = layers, embeddings
    try:
        yield
    finally:
        encoder.layer, base.embeddings = saved_layers, saved_embeddings


@contextlib.contextmanager
def upper_layers(model, k: int) -> Iterator[None]:
    """Within the block, `model(inputs_embeds=h, attention_mask=m)` runs encoder layers k.. on h."""
    _, encoder = _encoder(model)
    with _layers(model, torch.nn.ModuleList(list(encoder.layer)[k:]), _PassThrough()):
        yield


@torch.inference_mode()
def lower_outputs(
    model, windows: Sequence[tuple[int, ...]], *, k: int, device, pad_id: int, token_budget: int = 8192
) -> dict[tuple[int, ...], torch.Tensor]:
    """The output of the embeddings and encoder layers 0..k-1 for every distinct window
    ({input ids: [length, hidden] float32 on the CPU}), computed in eval mode, batched."""
    base, encoder = _encoder(model)
    distinct = list(dict.fromkeys(tuple(w) for w in windows))
    out: dict[tuple[int, ...], torch.Tensor] = {}
    was_training = model.training
    model.eval()
    try:
        with _layers(model, torch.nn.ModuleList(list(encoder.layer)[:k]), base.embeddings):
            lengths = [len(w) for w in distinct]
            for batch in length_sorted_batches(lengths, token_budget=token_budget):
                ids = torch.full((len(batch.indices), batch.padded_length), pad_id, dtype=torch.long)
                mask = torch.zeros_like(ids)
                for row, index in enumerate(batch.indices):
                    ids[row, : lengths[index]] = torch.tensor(distinct[index])
                    mask[row, : lengths[index]] = 1
                hidden = base(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
                for row, index in enumerate(batch.indices):
                    out[distinct[index]] = hidden[row, : lengths[index]].float().cpu().clone()
    finally:
        model.train(was_training)
    return out


def padded_ids(windows: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids of a batch of windows padded to the longest with `pad_id`, and the mask."""
    longest = max(len(w) for w in windows)
    ids = torch.full((len(windows), longest), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, window in enumerate(windows):
        ids[row, : len(window)] = torch.tensor(window)
        mask[row, : len(window)] = 1
    return ids.to(device), mask.to(device)


def padded(states: Sequence[torch.Tensor], device) -> tuple[torch.Tensor, torch.Tensor]:
    """Cached states of a batch stacked to [batch, longest, hidden] with zeros, and the mask."""
    longest = max(s.shape[0] for s in states)
    hidden = torch.zeros((len(states), longest, states[0].shape[1]), dtype=states[0].dtype)
    mask = torch.zeros((len(states), longest), dtype=torch.long)
    for row, s in enumerate(states):
        hidden[row, : s.shape[0]] = s
        mask[row, : s.shape[0]] = 1
    return hidden.to(device), mask.to(device)
