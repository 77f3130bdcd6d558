"""The lineage bridge as a Dagster sensor: each tick is one bridge pass over this instance."""

from dagster import DefaultSensorStatus, SensorEvaluationContext, SkipReason, sensor


@sensor(
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Turns new Dagster events and Metaflow runs into OpenLineage events and delivers them.",
)
def openlineage_bridge(context: SensorEvaluationContext):
    from bridge.bridge_pass import run_pass
    from bridge.sources import sources_for

    result = run_pass(sources_for(context.instance))
    delivery = result.delivery
    summary = (
        f"queued {sum(result.queued.values())} new events {dict(result.event_types)}; "
        f"delivered {delivery.delivered}, {delivery.pending} waiting"
    )
    if delivery.error:
        context.log.warning(f"Lineage backend unavailable, events stay queued: {delivery.error}")
        summary += f" (backend unavailable: {delivery.error})"
    return SkipReason(summary)
