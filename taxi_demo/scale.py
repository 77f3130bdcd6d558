"""How many trips a month the sample source writes: the demo's scale and the city's."""

FULL_SCALE_TRIPS = 3_000_000
DEMO_SCALE_TRIPS = 150_000
