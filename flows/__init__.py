"""The Metaflow training flow (``flows/train.py``), the plain modules its steps call, and its launcher."""
