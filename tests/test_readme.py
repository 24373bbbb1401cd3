"""The README's config reference lists every key with its current default."""

from __future__ import annotations

from joyrl_ray.config_docs import reference
from tests.support.runs import ROOT


def test_readme_config_reference_is_current() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- reference:start -->\n", 1)[1].split("\n<!-- reference:end -->", 1)[0]
    assert block == reference(), "regenerate with: python -m joyrl_ray.config_docs"


def test_readme_quick_start_has_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    install = "pip install torch==2.13.0 && pip install -r requirements.txt"
    assert f"{install} && python main.py" in readme
    assert "bash .ci/run" in readme
