"""The ChatML templates rendered without Jinja give exactly what Jinja renders from the same source."""

from __future__ import annotations

import pytest

from hermes.agent.local_templates import CHATML, KNOWN, SMOLLM2, known_renderer
from hermes.config.settings import bundled_gguf

CONVERSATIONS = [
    [],
    [{"role": "user", "content": "hi"}],
    [{"role": "system", "content": "Be brief.\n\nCurrent date and time: 2026-12-02 01:03 UTC"},
     {"role": "user", "content": "What is {{ 1 + 1 }}? {% raw %}"},
     {"role": "assistant", "content": '{"tool": "read_file", "arguments": {"path": "README.md"}}'},
     {"role": "user", "content": "  spaces \n\n and lines\n"}],
    [{"role": "assistant", "content": ""}, {"role": "tool", "content": "<|im_end|> inside"}],
]


def jinja(template: str, messages: list[dict[str, str]], generation_prompt: bool) -> str:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    compiled = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(template)
    return str(compiled.render(messages=messages, add_generation_prompt=generation_prompt,
                               bos_token="<|im_start|>", eos_token="<|im_end|>"))


@pytest.mark.parametrize("template", [CHATML, SMOLLM2], ids=["chatml", "smollm2"])
@pytest.mark.parametrize("generation_prompt", [True, False])
@pytest.mark.parametrize("messages", CONVERSATIONS, ids=[f"conversation{i}" for i in range(len(CONVERSATIONS))])
def test_the_python_renderer_matches_jinja(template: str, generation_prompt: bool,
                                          messages: list[dict[str, str]]) -> None:
    renderer = known_renderer(template)
    assert renderer is not None
    assert renderer(messages, generation_prompt) == jinja(template, messages, generation_prompt)


def test_another_or_edited_template_is_not_matched() -> None:
    assert known_renderer(CHATML + " ") is None
    assert known_renderer(SMOLLM2.replace("SmolLM", "Other")) is None
    assert len(KNOWN) == 2


def test_the_bundled_model_carries_the_matched_template() -> None:
    """If an update of the bundled GGUF changes its template, Jinja renders it (still right, only slower):
    this says so instead of letting the fast path go unnoticed."""
    path = bundled_gguf()
    if path is None:
        pytest.skip("the bundled model (the local extra) is not installed")
    from hermes.agent.local_engine import installed_engines, open_engine

    if not installed_engines():
        pytest.skip("no llama.cpp engine is installed (the local extra)")
    engine = open_engine(str(path), 256, 1)
    try:
        assert engine.template == SMOLLM2
    finally:
        engine.close()
