"""The embedded broker of `make run` (`filesystem://`): kombu's filesystem transport, with each
message whole before any consumer can see it.

kombu's own `_put` creates the message file and then writes it, and a consumer polling the
folder takes any file named for its queue, so it can take one still empty. It then fails to
decode it, and that error stops the worker ("Unrecoverable error: JSONDecodeError"): seen in CI
on a loaded 2-core host, where the worker stopped consuming and the messages behind it waited.
Here a message is written under a name no consumer takes (".part" after ".<queue>.msg") and
then renamed to its real name: a rename within one folder is atomic, so a consumer sees the
whole message or nothing. Everything else is kombu's.

`compliance_site.celery` makes this the transport of every `filesystem://` URL, so the web
process, workers, beat and the tests all publish this way."""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

PARTIAL_SUFFIX = ".part"


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put `payload` onto `queue`: written whole under a partial name, then renamed."""
        # kombu's name: consumers take files in name order, and only those ending ".<queue>.msg"
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL_SUFFIX
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            if os.path.exists(partial):
                os.remove(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
