import pytest

from scoring.constants import CLAIM_TYPE_CODES
from scoring.models import ClaimType


@pytest.mark.django_db
def test_the_data_migration_creates_the_four_claim_types_in_head_order():
    assert list(ClaimType.objects.values_list("code", flat=True)) == list(CLAIM_TYPE_CODES)
    assert list(ClaimType.objects.values_list("position", flat=True)) == [1, 2, 3, 4]
