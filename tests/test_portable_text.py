"""Local folders in error messages and tracebacks are named as events name them: whole folders only, once."""

from __future__ import annotations

import pytest

from bridge.translate.naming import Naming

NAMING = Naming(local_folders={"/home/ann/taxi/.state": "file://taxi-state", "/home/ann/taxi": ".", "/home/ann": "~"})


@pytest.mark.parametrize(
    ("text", "portable"),
    [
        ("file:///home/ann/taxi/.state/a.parquet does not exist", "file://taxi-state/a.parquet does not exist"),
        ("open /home/ann/taxi/.state/a.parquet", "open file://taxi-state/a.parquet"),
        ('File "/home/ann/taxi/flows/train.py", line 3', 'File "./flows/train.py", line 3'),
        ("/home/ann2/x and /home/ann/taxi.old/y", "/home/ann2/x and ~/taxi.old/y"),
        ("cwd /home/ann", "cwd ~"),
    ],
)
def test_a_local_folder_is_named_once_and_only_as_a_whole(text, portable):
    assert NAMING.portable_text(text) == portable
