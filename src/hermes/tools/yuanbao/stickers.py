"""A small built-in catalog of Yuanbao's stock stickers (package 1003, 128×128 PNG).

Each entry is the sticker's name in the app, its id, and English words it answers to (ours).
The ids are as upstream hermes-agent's sticker list gives them; unverified against Tencent.
"""

from __future__ import annotations

from typing import Any

PACKAGE = "1003"
CATALOG: tuple[tuple[str, str, str], ...] = (
    ("点赞", "159", "thumbs up like good agree nice"),
    ("ok", "169", "ok okay fine got it sure"),
    ("比心", "252", "heart love thanks finger heart"),
    ("爱心", "138", "heart love red heart"),
    ("鼓掌", "183", "applause clap bravo well done"),
    ("庆祝", "251", "celebrate party hooray congratulations"),
    ("打call", "246", "cheer support go fan"),
    ("抱拳", "163", "thanks respect please salute fist"),
    ("握手", "164", "handshake deal hello agreement"),
    ("敬礼", "227", "salute roger yes sir respect"),
    ("疑问", "144", "question confused what why"),
    ("惊讶", "143", "surprised wow shocked omg"),
    ("仔细分析", "248", "thinking analyse let me think hmm"),
    ("摊手", "200", "shrug whatever no idea helpless"),
    ("泪奔", "199", "crying tears sad moved"),
    ("委屈", "125", "hurt sad wronged pout"),
    ("害羞", "130", "shy blush embarrassed"),
    ("酷", "131", "cool sunglasses"),
    ("睡", "145", "sleep sleepy zzz tired"),
    ("晚安", "170", "good night sleep well moon"),
    ("太阳", "176", "sun good morning sunny"),
    ("吃瓜", "222", "popcorn watching gossip spectator"),
    ("狗头", "225", "doge joking kidding irony"),
    ("奋斗", "151", "work hard keep going fighting effort"),
    ("玫瑰", "165", "rose flower romance"),
    ("烟花", "258", "fireworks festival new year celebrate"),
)


def entry(name: str, sticker_id: str) -> dict[str, Any]:
    return {"sticker_id": sticker_id, "package_id": PACKAGE, "name": name, "width": 128, "height": 128,
            "formats": "png"}


def search(query: str, limit: int) -> list[dict[str, Any]]:
    """Stickers whose name or words contain every word of ``query`` (all of them when it is empty)."""
    words = query.lower().split()
    found = [entry(name, sid) | {"keywords": keys} for name, sid, keys in CATALOG
             if all(w in f"{name.lower()} {keys}" for w in words)]
    return found[:limit]


def find(sticker: str) -> dict[str, Any] | None:
    """The sticker named ``sticker`` or with that id."""
    wanted = sticker.strip().lower()
    return next((entry(name, sid) for name, sid, _ in CATALOG if wanted in (name.lower(), sid)), None)
