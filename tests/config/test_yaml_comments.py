"""ConfigFile.set keeps the comment that introduces the next section in front of that section."""

from __future__ import annotations

from pathlib import Path

from hermes.config.yamlfile import ConfigFile

TEXT = """\
# model settings
model:
  name: m1   # the model

# agent settings
agent:
  max_iterations: 10
"""


def test_new_key_goes_before_the_next_sections_comment(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(TEXT)
    cfg = ConfigFile.load(path)
    cfg.set("model.base_url", "http://127.0.0.1:8080/v1")
    cfg.set("agent.max_parallel_tools", 2)
    cfg.set("toolsets", ["todo"])
    cfg.save()
    assert path.read_text() == """\
# model settings
model:
  name: m1   # the model
  base_url: http://127.0.0.1:8080/v1

# agent settings
agent:
  max_iterations: 10
  max_parallel_tools: 2
toolsets:
  - todo
"""


def test_changing_an_existing_key_touches_only_its_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(TEXT)
    cfg = ConfigFile.load(path)
    cfg.set("model.name", "m2")
    cfg.save()
    assert path.read_text() == TEXT.replace("name: m1", "name: m2")
