"""What Home Assistant says of an intent a model's call ran, in the user's language."""

from __future__ import annotations

from typing import Any

from homeassistant.components import conversation
from homeassistant.components.conversation.default_agent import DefaultAgent
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import TemplateError
from homeassistant.helpers import intent, llm, template, translation


async def async_done_sentence(
    hass: HomeAssistant, result: llm.ToolResult
) -> str | None:
    """Return what Home Assistant says of an intent that did what was asked.

    Its own speech where it has one, else the sentence its default agent
    says for that intent, in the intent's language; "Done" where it has none.
    None for any other result (a question's answer, a failure, other tools).
    """
    data = result.data
    if result.error or not _done(data):
        return None
    speech = data.get("speech")
    plain = speech.get("plain") if isinstance(speech, dict) else None
    own = plain.get("speech") if isinstance(plain, dict) else None
    if isinstance(own, str) and own.strip():
        return own
    response = getattr(data, "original", None)
    if not isinstance(response, intent.IntentResponse):
        return None
    if sentence := await _async_intent_sentence(hass, response):
        return sentence
    texts = await translation.async_get_translations(
        hass, response.language, "conversation", [conversation.DOMAIN]
    )
    return texts.get("component.conversation.conversation.agent.done", "Done")


def _done(data: Any) -> bool:
    """Tell whether a result is an intent's that acted on its targets, all of them."""
    if not isinstance(data, dict) or data.get("response_type") != "action_done":
        return False
    targets = data.get("data")
    return (
        isinstance(targets, dict)
        and bool(targets.get("success"))
        and not targets.get("failed")
    )


async def _async_intent_sentence(
    hass: HomeAssistant, response: intent.IntentResponse
) -> str | None:
    """Return the default agent's sentence for a done intent, if it has one."""
    agent = conversation.async_get_agent(hass)
    if response.intent is None or not isinstance(agent, DefaultAgent):
        return None
    intents = await agent.async_get_or_load_intents(response.language)
    responses = (
        intents.intent_responses.get(response.intent.intent_type) if intents else None
    )
    if not isinstance(responses, dict):
        return None
    slots = {key: slot.get("value") for key, slot in response.intent.slots.items()}
    states = response.matched_states
    # The response the default agent would say: by domain, slot, default.
    domain = states[0].domain if states else None
    key = next(
        (key for key in (domain, *slots, "default") if key in responses),
        next(iter(responses)) if len(responses) == 1 else None,
    )
    if key is None:
        return None
    try:
        rendered = template.Template(responses[key], hass).async_render(
            {
                "slots": slots | response.speech_slots,
                "state": template.TemplateState(hass, states[0]) if states else None,
                "query": {
                    "matched": [template.TemplateState(hass, s) for s in states],
                    "unmatched": [],
                },
            },
            parse_result=False,
        )
    except TemplateError:
        return None
    return " ".join(str(rendered).split()) or None
