"""The readiness table tells the truth: ``Category.tools`` names exactly the registered tools that serve a route."""

from __future__ import annotations

from pathlib import Path

from hermes.routing.categories import CATEGORIES, ROUTE_NAMES, Vendor
from hermes.routing.readiness import local_problem, serving_tools
from hermes.tools.discovery import discover_builtin_tools
from hermes.tools.registry import ToolRegistry


def test_every_named_tool_is_registered_and_unbuilt_categories_have_no_tools() -> None:
    reg = ToolRegistry()
    discover_builtin_tools(reg)
    for name in ROUTE_NAMES:
        for tool in serving_tools(name):
            assert tool in reg, f"{name} names {tool}, which is not registered"
    would_serve = {"browser": ("browser_",), "video_gen": ("video_gen",), "stt": ("transcri", "speech_to")}
    for category, prefixes in would_serve.items():
        if not CATEGORIES[category].tools[CATEGORIES[category].functions[0]]:
            built = [t for t in reg.names() if t.startswith(prefixes)]
            assert not built, f"{built} exist: list them in the {category} category's tools"


def test_local_problem_names_the_program_and_the_package(tmp_path: Path) -> None:
    espeak = Vendor("espeak", "local eSpeak", frozenset({"tts"}), kind="local", programs=("espeak-ng", "espeak"),
                    install_hint="apt-get install espeak-ng")
    assert local_problem(espeak, {"PATH": str(tmp_path)}) == \
        "the program espeak-ng (or espeak) on PATH (apt-get install espeak-ng)"
    (tmp_path / "espeak").write_text("#!/bin/sh\n")
    (tmp_path / "espeak").chmod(0o755)
    assert local_problem(espeak, {"PATH": str(tmp_path)}) is None
    whisper = Vendor("local", "w", frozenset({"stt"}), kind="local", packages=("no_such_package_hermes",))
    assert local_problem(whisper, {}) == "the Python package no_such_package_hermes"
