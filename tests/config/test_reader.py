"""hermes.config.reader: the yes/no words, typed reads of dotted keys and their one error per bad value."""

from __future__ import annotations

import pytest

from hermes.config.reader import FALSE_WORDS, TRUE_WORDS, ConfigReader, truth
from hermes.errors import ConfigError
from hermes.toolgateway.configread import TableReader


def test_the_words() -> None:
    assert sorted(TRUE_WORDS) == ["1", "on", "true", "yes"]
    assert sorted(FALSE_WORDS) == ["0", "false", "no", "off"]
    assert truth(" YES ") is True
    assert truth("Off") is False
    assert truth("maybe") is None
    assert truth("") is None


def test_dotted_values_and_defaults() -> None:
    read = ConfigReader({"web": {"fetch_timeout": 5, "empty": None, "flat": 3}})
    assert read.value("web.fetch_timeout") == 5
    assert read.value("web.empty", "d") == "d"
    assert read.value("web.flat.deeper", "d") == "d"
    assert read.value("missing.key") is None
    assert read.table("web").value("flat") == 3
    assert read.table("nothing").value("x", 1) == 1


def test_flag() -> None:
    read = ConfigReader({"a": {"on": "On", "off": "no", "real": False, "bad": "maybe", "num": 1}})
    assert read.flag("a.on", False) is True
    assert read.flag("a.off", True) is False
    assert read.flag("a.real", True) is False
    assert read.flag("a.unset", True) is True
    with pytest.raises(ConfigError, match=r"^a\.bad in config\.yaml must be true or false$"):
        read.flag("a.bad", False)
    with pytest.raises(ConfigError, match="must be true or false"):
        read.flag("a.num", False)


def test_numbers_and_text() -> None:
    read = ConfigReader({"n": {"ok": 2.5, "big": 500, "word": "7", "yes": True, "int": 4, "name": " x ",
                               "blank": "  ", "list": [1]}})
    assert read.number("n.ok", 1.0, minimum=1, maximum=300) == 2.5
    assert read.number("n.unset", 20.0, minimum=1, maximum=300) == 20.0
    with pytest.raises(ConfigError, match=r"^n\.big in config\.yaml must be a number from 1 to 300$"):
        read.number("n.big", 1.0, minimum=1, maximum=300)
    for key in ("n.word", "n.yes"):
        with pytest.raises(ConfigError, match="must be a number"):
            read.number(key, 1.0, minimum=0, maximum=10)
    assert read.integer("n.int", 1, minimum=1, maximum=9) == 4
    with pytest.raises(ConfigError, match=r"must be a whole number >= 1$"):
        read.integer("n.ok", 1, minimum=1)
    assert read.text("n.name") == "x"
    assert read.text("n.int") == "4"
    assert read.text("n.blank", "dflt") == "dflt"
    with pytest.raises(ConfigError, match=r"^n\.list in config\.yaml must be a string, not list$"):
        read.text("n.list")


def test_strings() -> None:
    read = ConfigReader({"s": {"ok": [" a ", "b"], "bad": ["a", ""]}})
    assert read.strings("s.ok", ()) == ("a", "b")
    assert read.strings("s.unset", ("d",)) == ("d",)
    with pytest.raises(ConfigError, match="must be a list of non-empty strings"):
        read.strings("s.bad", ())


def test_the_gateway_table_reader_keeps_its_own_rules() -> None:
    read = TableReader({"modal": {"flag": "yes", "none": None, "name": " x ", "n": 2}}).table("modal")
    assert read.name("flag") == "modal.flag"
    with pytest.raises(ConfigError, match=r"^gateway config: modal\.flag must be true or false$"):
        read.flag("flag", False)
    with pytest.raises(ConfigError, match=r"^gateway config: modal\.none must be a number >= 0$"):
        read.number("none", 1.0)
    assert read.text("name") == " x "
    assert read.word("name") == "x"
    assert read.number("n", 0.0, maximum=5) == 2.0
