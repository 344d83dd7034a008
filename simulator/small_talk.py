"""What the scripted model says to anything that is not about the home.

A joke asked for gets the one joke it knows; any other question or request
("tell me …", "what is …?") gets a canned answer that says what the simulator
can do; anything else is echoed, which is what most tests look for.
"""

from __future__ import annotations

import re
from typing import Final

JOKE: Final = (
    "Why did the smart bulb break up with the switch? "
    "It felt it was always being turned off."
)
CANNED: Final = (
    "The simulator has no answer. It turns devices on and off, tells a "
    "device's state and sets the thermostat; a real server answers the rest."
)
_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:tell|give|show|explain|describe|write|sing|"
    r"can you|could you|who|why|when|where)\b",
    re.IGNORECASE,
)
# What Home Assistant takes for a question mark at the end of an answer
# (ChatLog.continue_conversation): Latin, Greek (its question mark is a
# semicolon once normalised) and full-width.
_QUESTION_MARKS = ("?", ";", "？")


def reply(user_text: str) -> str:
    """Return the answer to words no tool or format answers.

    It never ends with a question mark: Home Assistant keeps the conversation
    open (continue_conversation) after an answer that does, so an echoed
    question would look like the assistant asking back. A test that wants
    that scripts such an answer.
    """
    text = user_text.strip()
    if re.search(r"\bjokes?\b", text, re.IGNORECASE):
        return JOKE
    if text.endswith(_QUESTION_MARKS) or _REQUEST.match(text):
        if not text.endswith((".", "!", *_QUESTION_MARKS)):
            text += "."
        return f"You asked: {text} {CANNED}"
    return f"You said: {user_text}"
