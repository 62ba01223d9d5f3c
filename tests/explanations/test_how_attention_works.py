"""The "How attention works" page shows numbers computed live by the attention functions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.urls import reverse
from django.utils.formats import number_format

from explanations.attention import padding_mask, scaled_dot_product_attention
from explanations.attention_demo import FOCUS_ROW, TOKENS, K, Q, V

pytestmark = pytest.mark.django_db
URL = reverse("explanations:how_attention_works")


def three(x: float) -> str:
    return number_format(round(x, 3), 3)


@pytest.mark.parametrize("persona", ["reviewer", "auditor", "admin_user"])
def test_every_signed_in_role_sees_the_worked_example(client, request, persona):
    client.force_login(request.getfixturevalue(persona))
    assert client.get(URL).status_code == 200


def test_an_anonymous_visitor_is_sent_to_log_in(client, settings):
    settings.LOGIN_URL = "/accounts/login/"
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_page_shows_the_weights_outputs_and_renormalised_row_the_function_computes(client, reviewer):
    # given the function's own answer for the page's inputs
    q, k, v = (np.array(a, dtype=float) for a in (Q, K, V))
    output, weights = scaled_dot_product_attention(q, k, v)
    mask = padding_mask([len(TOKENS) - 1], len(TOKENS))[0, 0]
    masked_output, masked_weights = scaled_dot_product_attention(q, k, v, mask)
    # when
    client.force_login(reviewer)
    html = client.get(URL).content.decode()
    # then every weight, output and scaled score appears as the page formats it
    scaled = q @ k.T / np.sqrt(2)
    for matrix in (weights, masked_weights, output, masked_output, scaled):
        for x in matrix.ravel():
            assert three(x) in html
    kept = weights[FOCUS_ROW][mask]
    assert three(kept.sum()) in html
    assert three(masked_weights[FOCUS_ROW, 1]) == three(kept[1] / kept.sum())
    for token in TOKENS:
        assert f'<th scope="row">{token}</th>' in html


def test_the_heat_map_data_is_a_json_block_and_the_script_is_external(client, reviewer):
    client.force_login(reviewer)
    html = client.get(URL).content.decode()
    start = html.index('<script id="attention-demo-data" type="application/json">')
    payload = html[html.index(">", start) + 1 : html.index("</script>", start)]
    data = json.loads(payload)
    assert data["tokens"] == list(TOKENS)
    _, weights = scaled_dot_product_attention(*(np.array(a, dtype=float) for a in (Q, K, V)))
    np.testing.assert_allclose(data["weights"], weights, atol=1e-4)
    assert 'src="/static/js/attention_demo.js"' in html
    assert 'src="/static/vendor/plotly/plotly.min.js"' in html
    # no inline executable script: every <script> either has src or is a JSON data block
    for chunk in html.split("<script")[1:]:
        opening = chunk[: chunk.index(">")]
        assert "src=" in opening or 'type="application/json"' in opening
