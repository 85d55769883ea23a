"""The README's "Use from Python" examples run as written (on the test's artifact, substituted for
model.tbsc), so they cannot drift from the package."""

import re

from conftest import REPO


def python_blocks():
    text = (REPO / "README.md").read_text()
    start = text.index("\n## Use from Python")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else None]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_section_has_examples():
    assert len(python_blocks()) >= 2


def test_readme_examples_run(artifact_path, tmp_path, monkeypatch):
    # In order, in one namespace: a reader pastes them one after the other into one session.
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__readme__"}
    for index, block in enumerate(python_blocks()):
        code = block.replace('"model.tbsc"', repr(artifact_path))
        exec(compile(code, f"README.md, Use from Python, block {index + 1}", "exec"), namespace)
