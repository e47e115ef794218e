"""The README's Python example ("From Python"), run as it is written, in a temporary
directory: the documented code must work."""

import os
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def test_readme_example_runs(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## From Python"):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "no python block in the README's From Python section"
    monkeypatch.chdir(tmp_path)
    exec(compile(match.group(1), "README.md", "exec"), {"__name__": "readme"})
    assert os.listdir(tmp_path)
