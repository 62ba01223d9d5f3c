"""Writes of the scoring app, one module per concern (ingest, pipeline, model versions, rule
sets). Import from the submodule: `from scoring.services.ingest import message_ingest`."""
