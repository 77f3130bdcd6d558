"""The pipeline's one error hierarchy: every error the project's own code raises on purpose is a
:class:`PipelineError` whose message names the thing (a setting, a file, a table, a month) and what to do.
"""


class PipelineError(Exception):
    """An error of the forecasting pipeline; the message names the thing and the fix."""
