"""Plain forecasting code the training flow calls: table I/O, features, models, backtests, plots."""
