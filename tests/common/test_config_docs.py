"""docs/config-keys.md is what `python -m orbitmq.tools.config_docs` generates from the catalogue."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common.keycatalog import CATALOGUE
from orbitmq.tools import config_docs

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_table_is_the_generated_one() -> None:
    assert config_docs.main(["--check", "--root", str(ROOT)]) == 0, (
        "docs/config-keys.md is stale: run python -m orbitmq.tools.config_docs --write"
    )


def test_the_check_fails_on_a_stale_table_and_write_fixes_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    stale = config_docs.render().replace("| applied |", "| ignored: no |", 1)
    (tmp_path / "docs" / "config-keys.md").write_text(stale)
    assert config_docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert config_docs.main(["--write", "--root", str(tmp_path)]) == 0
    assert config_docs.main(["--check", "--root", str(tmp_path)]) == 0


def test_every_catalogued_key_has_a_row_and_host_figures_stay_out() -> None:
    text = config_docs.render()
    for spec in CATALOGUE:
        assert f"| `{spec.key}` |" in text, spec.key
    assert "CPUs" in text  # thread counts are shown as RocketMQ's formulas, not this host's figures
