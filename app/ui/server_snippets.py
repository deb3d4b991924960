"""The Server page's ready-to-run snippets for the openai and anthropic SDKs and curl (Qt-free)."""

from __future__ import annotations

__all__ = ["snippets"]


def snippets(url: str, api_key: str | None, model: str) -> dict[str, str]:
    """Ready-to-run snippets for the openai and anthropic SDKs and curl."""
    key = api_key or "unused"
    auth = f' -H "Authorization: Bearer {api_key}"' if api_key else ""
    return {
        "OpenAI (Python)": (
            "from openai import OpenAI\n\n"
            f'client = OpenAI(base_url="{url}/v1", api_key="{key}")\n'
            "reply = client.chat.completions.create(\n"
            f'    model="{model}",\n'
            '    messages=[{"role": "user", "content": "Hello!"}],\n'
            ")\nprint(reply.choices[0].message.content)\n"
        ),
        "Anthropic (Python)": (
            "from anthropic import Anthropic\n\n"
            f'client = Anthropic(base_url="{url}", api_key="{key}")\n'
            "reply = client.messages.create(\n"
            f'    model="{model}", max_tokens=512,\n'
            '    messages=[{"role": "user", "content": "Hello!"}],\n'
            ")\nprint(reply.content[0].text)\n"
        ),
        "curl": (
            f'curl {url}/v1/chat/completions{auth} -H "Content-Type: application/json" \\\n'
            f'  -d \'{{"model": "{model}", "messages": [{{"role": "user", "content": "Hello!"}}]}}\'\n'
        ),
    }
