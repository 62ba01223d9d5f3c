"""utf8_file_check: a text file is checked to its end, in blocks, before anything of it is stored;
the first byte that is not UTF-8 is named with its offset and line, wherever the blocks cut."""

from __future__ import annotations

import pytest

from scoring.sources.charsets import utf8_file_check
from scoring.sources.errors import SourceError

BLOCKS = [1, 2, 3, 7, 1 << 20]


@pytest.mark.parametrize("block", BLOCKS)
def test_utf8_text_passes_whatever_the_block_size(tmp_path, block):
    path = tmp_path / "ok.txt"
    path.write_text("café\nnaïve — “quoted” ✓\n€\n", encoding="utf-8")

    utf8_file_check(path, block=block)  # raises nothing


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize(
    ("data", "offset", "line", "byte"),
    [
        ("ok\ncafé\n".encode() + b"caf\xe9\n", 12, 3, "e9"),  # Latin-1 after good UTF-8
        ("aé\n".encode() + b"\xff", 4, 2, "ff"),  # a byte UTF-8 never uses
        ("ab\né".encode()[:-1], 3, 2, "c3"),  # a sequence the end of the file cuts
    ],
)
def test_the_first_bad_byte_is_named_with_its_offset_and_line(tmp_path, block, data, offset, line, byte):
    path = tmp_path / "bad.txt"
    path.write_bytes(data)

    with pytest.raises(SourceError) as caught:
        utf8_file_check(path, block=block)

    assert caught.value.code == "not_utf8"
    assert f"byte 0x{byte} at offset {offset:,} (line {line})" in str(caught.value)
