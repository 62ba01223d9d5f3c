"""The client's address behind reverse proxies, as the login lock and the API throttles read it."""

from __future__ import annotations

import pytest

from core.client_ip import client_ip_from

XFF = "HTTP_X_FORWARDED_FOR"


@pytest.mark.parametrize(
    ("proxies", "forwarded", "client"),
    [
        (0, "6.6.6.6", "10.0.0.2"),  # no trusted proxy: a header a client sends is ignored
        (1, "198.51.100.7", "198.51.100.7"),  # one proxy appended the address it saw
        (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),  # what the client wrote itself comes first
        (2, "6.6.6.6, 198.51.100.7, 10.0.0.9", "198.51.100.7"),
        (2, "198.51.100.7", "10.0.0.2"),  # fewer hops than proxies: it did not come through them
        (1, "", "10.0.0.2"),
    ],
)
def test_the_client_is_the_address_the_first_trusted_proxy_saw(proxies, forwarded, client):
    meta = {"REMOTE_ADDR": "10.0.0.2", XFF: forwarded}

    assert client_ip_from(meta, proxies=proxies, header=XFF) == client
