"""JSON endpoints of the monitoring page (/api/metrics/...): compliance admins only, GET only.

Each view validates its query (period=day|week, model_version=<id>), resolves the model version
(default: the active one), brings the daily roll-ups up to date (monitoring.services), and returns
what one selector computes, plus the activation markers every chart draws."""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_errors import ApiError
from core.permissions import HasRole
from core.roles import Role
from monitoring import selectors
from monitoring.errors import MetricsInputError
from monitoring.services import rollup_refresh
from monitoring.timeline import DAY, PERIODS
from scoring.models import ModelVersion


class MetricsQuerySerializer(serializers.Serializer):
    period = serializers.ChoiceField(choices=PERIODS, default=DAY)
    model_version = serializers.IntegerField(required=False, min_value=1)


class MetricsView(APIView):
    """Base of the metrics endpoints: subclasses name their selector in `compute`."""

    permission_classes = [HasRole.of(Role.COMPLIANCE_ADMIN)]
    http_method_names = ["get", "head", "options"]
    uses_rollup: ClassVar[bool] = True
    default_to_active: ClassVar[bool] = True

    def compute(self, *, version: ModelVersion | None, period: str) -> dict[str, Any]:
        raise NotImplementedError

    @extend_schema(parameters=[MetricsQuerySerializer], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        # A plain dict, not the QueryDict: DRF reads an empty value in a QueryDict as "absent"
        # (HTML form semantics), which would answer `?period=` as if no period were asked for.
        query = MetricsQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        version_id = query.validated_data.get("model_version")
        try:
            version = (
                selectors.version_resolve(version_id)
                if version_id is not None or self.default_to_active
                else None
            )
        except MetricsInputError as exc:
            # The parameter is well formed; the version it names does not exist.
            raise ApiError(status_code=404, code="not_found", message=str(exc)) from exc
        if self.uses_rollup:
            rollup_refresh()
        data = self.compute(version=version, period=query.validated_data["period"])
        data["activations"] = selectors.activation_markers()
        return Response(data)


class DisagreementView(MetricsView):
    """Disagreement per claim type per period with Wilson bands, references and alerts."""

    def compute(self, *, version, period):
        return selectors.disagreement(version=version, period=period)


class AlertsView(MetricsView):
    """Every disagreement alert (all model versions unless one is named)."""

    default_to_active = False

    def compute(self, *, version, period):
        return {"period": period, "alerts": selectors.alerts(period=period, version=version)}


class QualityView(MetricsView):
    """Precision from reviewed flags and recall estimated from the QA sample, per claim type."""

    def compute(self, *, version, period):
        return selectors.quality(version=version)


class ConfusionView(MetricsView):
    """The reviewer-vs-model confusion matrix of one model version."""

    def compute(self, *, version, period):
        return selectors.confusion(version=version)


class LengthDriftView(MetricsView):
    def compute(self, *, version, period):
        return selectors.length_drift(version=version, period=period)


class ScoreDriftView(MetricsView):
    def compute(self, *, version, period):
        return selectors.score_drift(version=version, period=period)


class RulesDriftView(MetricsView):
    def compute(self, *, version, period):
        return selectors.rules_vs_model(version=version, period=period)


class ExplanationHealthView(MetricsView):
    def compute(self, *, version, period):
        return selectors.explanation_health(version=version, period=period)


class QueueHealthView(MetricsView):
    """Live counts of what waits, and decisions per reviewer per day (no roll-up involved)."""

    default_to_active = False
    uses_rollup = False

    def compute(self, *, version, period):
        return selectors.queue_health()
