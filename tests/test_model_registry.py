"""Which model version serves: every decision in an Iceberg table, the serving version the newest decision's."""

import pytest
from pyiceberg.catalog import Catalog

from bridge.sources.metaflow_recorder import recording
from flows.forecasting import registry
from flows.forecasting.promotion import Decision
from taxi_core.catalog import CatalogConfig, open_catalog
from taxi_core.names import MODEL_PROMOTIONS


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    config = CatalogConfig(warehouse=str(tmp_path / "warehouse"), sqlite_path=str(tmp_path / "catalog.db"))
    opened = open_catalog(config)
    opened.create_namespace_if_not_exists("nyc_taxi")
    return opened


def test_the_serving_version_is_the_newest_decision_s_and_each_decision_is_kept(catalog):
    assert registry.serving_version(catalog, "forecast_model") is None
    first = Decision("Flow/1", None, True, "the first version")
    worse = Decision("Flow/2", "Flow/1", False, "Flow/1 keeps serving", 9.0, 6.0, 1.5, (1.3, 1.7), 28)
    better = Decision("Flow/3", "Flow/1", True, "Flow/3 promoted", 5.0, 6.0, 0.83, (0.78, 0.9), 28)
    served, snapshots = [], []
    for decision, champion in ((first, "seasonal_naive"), (worse, "glm"), (better, "blend")):
        with recording() as step:
            snapshots.append(registry.record_decision(catalog, "forecast_model", decision, champion))
            served.append(registry.serving_version(catalog, "forecast_model"))
        written, read = step.to_artifact()["writes"][0], step.to_artifact()["reads"][0]
        assert written["name"] == read["name"] == MODEL_PROMOTIONS
        assert written["version"] == read["version"] == str(snapshots[-1])
    assert served == [
        registry.Serving("Flow/1", "seasonal_naive", snapshots[0]),
        registry.Serving("Flow/1", "seasonal_naive", snapshots[1]),
        registry.Serving("Flow/3", "blend", snapshots[2]),
    ]
    history = registry.decisions(catalog, "forecast_model")
    assert history.challenger.tolist() == ["Flow/1", "Flow/2", "Flow/3"]
    assert history.promoted.tolist() == [True, False, True]
    assert history.ratio_high.iloc[1] == pytest.approx(1.7) and history.days.iloc[2] == 28
    assert registry.serving_version(catalog, "another_model") is None
