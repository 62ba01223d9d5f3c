"""A Slack workspace export, built in the tests: channels.json, users.json, a folder per channel
with one JSON file per day."""

from __future__ import annotations

import json
from pathlib import Path

T0 = 1_741_000_000.0  # 2025-03-03T11:06:40Z


def slack_export(
    root: Path, channels: dict[str, list[dict]] | None = None, *, listed: list[str] | None = None
) -> Path:
    """Write an export under root/export. `channels`: name -> messages (ts as float seconds);
    `listed`: the channel names channels.json lists (default: those with messages)."""
    folder = root / "export"
    folder.mkdir(parents=True)
    channels = channels if channels is not None else {"client-desk": split_claim_lines()}
    names = listed if listed is not None else list(channels)
    (folder / "users.json").write_text(
        json.dumps(
            [
                {"id": "U1", "name": "sarah", "real_name": "Sarah Adviser"},
                {"id": "U2", "name": "ines", "profile": {"real_name": "Ines Client"}},
            ]
        )
    )
    (folder / "channels.json").write_text(
        json.dumps([{"id": f"C{i}", "name": n} for i, n in enumerate(names)])
    )
    for name, lines in channels.items():
        (folder / name).mkdir()
        by_day: dict[str, list[dict]] = {}
        for line in lines:
            by_day.setdefault("2025-03-03", []).append({"type": "message", **line, "ts": f"{line['ts']:.6f}"})
        for day, messages in by_day.items():
            (folder / name / f"{day}.json").write_text(json.dumps(messages))
    return folder


def split_claim_lines() -> list[dict]:
    """A client asks, the adviser answers with a claim split over two lines, 20 s apart."""
    return [
        {
            "user": "U2",
            "text": "is the <https://bank.example/fund|Harbor fund> any good? &amp; fees?",
            "ts": T0,
        },
        {"user": "U1", "text": "The Harbor fund is our flagship.", "ts": T0 + 30},
        {"user": "U1", "text": "It is approved and endorsed by the SEC.", "ts": T0 + 50},
        {"subtype": "channel_join", "user": "U2", "text": "<@U2> has joined the channel", "ts": T0 + 60},
        {"user": "U2", "text": "thanks <@U1>", "ts": T0 + 90},
    ]
