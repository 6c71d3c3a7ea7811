"""Chat templates the local engines render without Jinja.

A GGUF carries its chat template as Jinja source, and :meth:`hermes.agent.local_engine.Engine.render`
runs it in Jinja's sandbox. Importing Jinja and compiling a template costs about 0.1 s on a slow CPU,
a tenth of a first turn's wait for the bundled model, so the ChatML templates in use here (hermes's own
fallback and the one SmolLM2 ships) are matched by their exact source text and rendered by a few lines
of Python instead. Any other template, or any change to one of these, goes through Jinja as before;
``tests/agent/test_local_templates.py`` checks both renderers give the same text as Jinja.
"""

from __future__ import annotations

from collections.abc import Callable

#: renders (messages, add_generation_prompt) to the prompt text
Renderer = Callable[[list[dict[str, str]], bool], str]

#: the template used when a GGUF carries none (ChatML)
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: SmolLM2-Instruct's template (the bundled model): ChatML with a default system message
SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def _chatml(default_system: str | None) -> Renderer:
    def render(messages: list[dict[str, str]], generation_prompt: bool) -> str:
        parts = []
        if default_system is not None and messages and messages[0]["role"] != "system":
            parts.append(f"<|im_start|>system\n{default_system}<|im_end|>\n")
        parts.extend(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        if generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)

    return render


KNOWN: dict[str, Renderer] = {CHATML: _chatml(None), SMOLLM2: _chatml(_SMOLLM2_SYSTEM)}


def known_renderer(template: str) -> Renderer | None:
    """The Python renderer of ``template`` when its source is one of :data:`KNOWN`, else None."""
    return KNOWN.get(template)
