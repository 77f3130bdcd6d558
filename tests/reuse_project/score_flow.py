"""A two-step Metaflow flow that reads the daily totals and writes a model, recording its lineage.

start   read shop/daily_totals (a file) and fit the mean
end     write the model scores_model, with its metric and parameter
"""

import csv
import os

from metaflow import FlowSpec, current, step

from bridge.sources.metaflow_recorder import record_lineage, record_model, record_read


@record_lineage
class ScoreFlow(FlowSpec):
    @step
    def start(self):
        path = os.path.join(os.environ["SHOP_ROOT"], "daily_totals.csv")
        with open(path, newline="") as handle:
            totals = [int(row["total"]) for row in csv.DictReader(handle)]
        record_read("shop/daily_totals", os.environ["SHOP_TOTALS_VERSION"], kind="file", rows=len(totals))
        self.mean = sum(totals) / len(totals)
        self.next(self.end)

    @step
    def end(self):
        version = f"{current.flow_name}/{current.run_id}"
        record_model("scores_model", version, metrics={"mean": self.mean}, params={"kind": "mean"})


if __name__ == "__main__":
    ScoreFlow()
