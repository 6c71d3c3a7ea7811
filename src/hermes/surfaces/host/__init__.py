"""The session host: many live conversations in one process, for surfaces that serve many people.

The messaging gateway (``hermes gateway run``) and the desktop app server use it; it knows nothing of
any platform. A surface names each conversation with a key (any text: the gateway uses
``platform:chat:thread``) and hands the host that conversation's messages::

    host = SessionHost(settings, surface=Surface.MESSAGING, busy_mode="queue")
    host.submit("telegram:42:", "hello", listener)     # "started" | "queued" | "interrupting" | "reply"
    host.interrupt("telegram:42:")                     # stop the running turn, drop queued messages
    host.reset("telegram:42:")                         # the next message starts a new session
    host.close()                                       # stop everything, end every session

What the host guarantees:

* **one session per key, stored**: the first turn of a key opens a new stored session (in the
  settings' ``state.db``) and records key → session (:class:`~hermes.store.conversations.ConversationStore`);
  after a restart the key's next turn resumes that session with its messages and frozen tool list;
* **a turn queue per conversation**: one turn at a time per key, in arrival order; different keys run
  in parallel on a bounded worker pool. A message arriving during a turn waits for it
  (``busy_mode="queue"``) or interrupts it and runs next (``busy_mode="interrupt"``);
* **round trips**: when the agent asks the person (clarify questions, approving a command) the
  listener's :meth:`~HostListener.on_request` is called on the turn's thread and may wait for
  replies with :meth:`LiveSession.next_reply`; while it waits, :meth:`SessionHost.submit` hands
  the conversation's messages to it as replies instead of queueing them (``"reply"``), and
  :meth:`SessionHost.answer` hands it any value (a button press). An interrupt or reset wakes the wait
  with :class:`RoundTripCancelled`;
* **the event stream**: every event of the agent's event sink (:mod:`hermes.agent.events`) reaches
  the listener's :meth:`~HostListener.on_event`, ending with one ``TurnFinished`` per turn — also for
  a turn that failed (a ``Notice`` with the error, then ``TurnFinished(reason="error")``);
* **memory**: :meth:`SessionHost.evict_idle` lets go of idle conversations; they resume from the store.
"""

from hermes.surfaces.host.host import BUSY_MODES, BusyMode, SessionHost, Submitted
from hermes.surfaces.host.live import HostListener, LiveSession, RoundTripCancelled, SessionSink

__all__ = ["BUSY_MODES", "BusyMode", "HostListener", "LiveSession", "RoundTripCancelled", "SessionHost",
           "SessionSink", "Submitted"]
