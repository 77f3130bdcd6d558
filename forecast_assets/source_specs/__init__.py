"""Each data source declared once: its files, how they are verified and read, its audits and its table."""
