"""The streamed reply: when it sends, when it edits, and what the end looks like."""

from __future__ import annotations

from hermes.surfaces.messaging.streaming import CURSOR, StreamedReply


class Chat:
    def __init__(self, fail_edits: bool = False) -> None:
        self.log: list[tuple[str, str, str]] = []
        self.fail_edits = fail_edits

    def send(self, text: str) -> str:
        self.log.append(("send", str(len(self.log)), text))
        return str(len(self.log) - 1)

    def edit(self, message_id: str, text: str) -> None:
        if self.fail_edits:
            raise RuntimeError("edit refused")
        self.log.append(("edit", message_id, text))


def test_edits_wait_for_enough_new_text_and_time() -> None:
    now = [0.0]
    chat = Chat()
    reply = StreamedReply(chat.send, chat.edit, 1000, min_chars=10, every_chars=20, every_seconds=1.0,
                          clock=lambda: now[0])
    reply.add("short")
    assert chat.log == []  # under min_chars: nothing yet
    reply.add(" and now enough")
    assert chat.log == [("send", "0", "short and now enough" + CURSOR)]
    reply.add(" x" * 15)  # 30 more characters, but no time passed
    assert len(chat.log) == 1
    now[0] = 1.5
    reply.add("!")
    assert chat.log[-1][0] == "edit" and chat.log[-1][2].endswith("!" + CURSOR)
    assert reply.finish("the final answer")
    assert chat.log[-1] == ("edit", "0", "the final answer")


def test_a_long_final_answer_continues_in_new_messages() -> None:
    chat = Chat()
    reply = StreamedReply(chat.send, chat.edit, 100, min_chars=1)
    reply.add("a" * 50)
    assert reply.finish("word " * 60)
    kinds = [k for k, _, _ in chat.log]
    assert kinds[0] == "send" and kinds[1] == "edit" and kinds[2:] == ["send"] * (len(kinds) - 2)
    assert all(len(text) <= 100 for _, _, text in chat.log)


def test_nothing_streamed_or_a_refused_edit_leaves_the_answer_to_the_caller() -> None:
    chat = Chat()
    reply = StreamedReply(chat.send, chat.edit, 100, min_chars=1000)
    reply.add("not enough")
    assert not reply.finish("answer")
    broken = Chat(fail_edits=True)
    reply = StreamedReply(broken.send, broken.edit, 100, min_chars=1)
    reply.add("x")
    assert not reply.finish("answer")  # the caller sends it anew
