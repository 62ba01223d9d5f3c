"""The API's list filtering: django-filter's backend, refusing a query parameter the endpoint does
not read. Without it `?recieved_after=...` or `?since=...` is ignored and the answer is every
message, which a feed or an auditor reads as the filtered list."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend

from core.api_errors import ApiError

# The parameters a paginator may read, by the attribute that names each.
_PAGINATION_PARAMETERS = (
    "cursor_query_param",
    "page_query_param",
    "page_size_query_param",
    "limit_query_param",
    "offset_query_param",
)


class StrictFilterBackend(DjangoFilterBackend):
    """DjangoFilterBackend that answers an unknown query parameter with a 400 naming it and the
    parameters the endpoint reads (its filters and its paginator's), and filters nothing."""

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        known = set(filterset_class.base_filters) if filterset_class else set()
        paginator = getattr(view, "paginator", None)
        known |= {name for attr in _PAGINATION_PARAMETERS if (name := getattr(paginator, attr, None))}
        unknown = sorted(set(request.query_params) - known)
        if unknown:
            raise ApiError(
                status_code=400,
                code="invalid",
                message=(
                    f"Unknown query parameter{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}. "
                    f"This endpoint reads: {', '.join(sorted(known)) or 'none'}."
                ),
                details={name: ["Not a parameter of this endpoint."] for name in unknown},
            )
        return super().filter_queryset(request, queryset, view)
