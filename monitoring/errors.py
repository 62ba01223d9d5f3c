"""Errors of the monitoring app."""


class MonitoringError(Exception):
    """Base class of the monitoring app's domain errors."""


class MetricsInputError(MonitoringError):
    """A metrics request names something that does not exist or is out of range."""


class SimulationError(MonitoringError):
    """simulate_traffic cannot run as asked; nothing was written."""
