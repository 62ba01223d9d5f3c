"""The embedded `filesystem://` broker publishes each message whole (core/broker.py)."""

from __future__ import annotations

from queue import Empty

import pytest
from kombu import Connection

from compliance_site.celery import app as celery_app
from core import broker


@pytest.fixture
def channel(tmp_path):
    folders = {
        "data_folder_in": str(tmp_path / "queue"),
        "data_folder_out": str(tmp_path / "queue"),
        "control_folder": str(tmp_path / "control"),
    }
    for folder in folders.values():
        (tmp_path / folder).mkdir(exist_ok=True)
    with Connection("filesystem://", transport_options=folders) as connection:
        yield connection.default_channel


def test_every_filesystem_url_gets_the_whole_message_transport():
    with celery_app.connection_for_write("filesystem://") as connection:
        assert isinstance(connection.transport, broker.Transport)


def test_a_consumer_polling_while_a_message_is_written_takes_nothing_and_then_the_whole_message(
    channel, monkeypatch
):
    seen_while_writing = []

    def dumps_and_poll(payload):
        # kombu's own _put has created the queue's .msg file, still empty, by this point
        try:
            seen_while_writing.append(channel._get("default"))
        except Empty:
            seen_while_writing.append(None)
        return original_dumps(payload)

    original_dumps = broker.dumps
    monkeypatch.setattr(broker, "dumps", dumps_and_poll)

    channel._put("default", {"body": "hello"})

    assert seen_while_writing == [None]
    assert channel._get("default") == {"body": "hello"}
    with pytest.raises(Empty):
        channel._get("default")
