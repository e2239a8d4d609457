"""evalnoise.atomic: the pipeline's CSV artifacts are written whole or not at all."""

from pathlib import Path

import pandas as pd
import pytest

from evalnoise.atomic import write_csv


def test_write_csv_writes_the_artifact_format_whole_or_not_at_all(tmp_path):
    target = tmp_path / "table.csv"
    write_csv(target, pd.DataFrame({"a": [1, 2], "x": [0.123456789, float("nan")]}))
    assert target.read_text(encoding="utf-8").splitlines() == ["a,x", "1,0.123457", "2,"]

    class Broken:
        def to_csv(self, path, **_):
            Path(path).write_text("half", encoding="utf-8")
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_csv(tmp_path / "broken.csv", Broken())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]
