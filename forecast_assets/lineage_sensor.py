"""The lineage bridge as a Dagster sensor: each tick is one bridge pass over this instance."""

from dagster import DefaultSensorStatus, SensorEvaluationContext, SkipReason, sensor


@sensor(
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Turns new Dagster events and Metaflow runs into OpenLineage events and DataHub metadata, "
        "and reports Metaflow runs started from the shell as materializations."
    ),
)
def openlineage_bridge(context: SensorEvaluationContext):
    from bridge.bridge_pass import default_outbox, run_pass
    from bridge.dagster_reports import report_metaflow_outputs
    from bridge.sources import sources_for

    outbox = default_outbox()
    result = run_pass(sources_for(context.instance), outbox)
    reported = report_metaflow_outputs(context.instance, outbox)
    delivery = result.delivery
    summary = (
        f"queued {sum(result.queued.values())} new events {dict(result.event_types)}; "
        f"delivered {delivery.delivered}, {delivery.pending} waiting"
    )
    if reported:
        summary += f"; reported {len(reported)} shell-run Metaflow versions as materializations"
    if delivery.error:
        context.log.warning(f"Lineage backend unavailable, events stay queued: {delivery.error}")
        summary += f" (backend unavailable: {delivery.error})"
    return SkipReason(summary)
