"""Integrations with frameworks, each behind an extra: ``django`` (``jobq[django]``), the
OpenTelemetry tracing (``jobq[otel]``). Nothing here is imported by jobq itself."""
