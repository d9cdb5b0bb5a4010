"""The web UI's pages: one template (`static/page.html`: head, navigation, shared scripts) around
each family's view (`attnkit.families.protocol.Page`). The navigation links every family's pages,
in the order of the family table, so every page reaches every other."""

from __future__ import annotations

import html
from collections.abc import Iterable
from importlib import resources

from attnkit.families.protocol import Api, Page

TEMPLATE = (resources.files("attnkit.serve") / "static" / "page.html").read_text(encoding="utf-8")


def navigation(apis: Iterable[Api]) -> str:
    """Links to every page of `apis`, then to the API schema."""
    links = [f'<a href="{html.escape(path)}">{html.escape(page.title)}</a>' for api in apis for path, page in api.pages.items()]
    return " · ".join([*links, '<a href="/openapi.json">API schema</a>'])


def render_page(page: Page, api: Api, nav: str) -> str:
    """The HTML of `page`: the template with its title, styles, view and scripts (the family's
    renderer and its stylesheet first, so the page's own scripts can use `AttnView.render`)."""
    scripts = ([api.renderer] if api.renderer else []) + [name for name in page.scripts if name != api.renderer]
    styles = ([api.renderer_style] if api.renderer_style else []) + [name for name in page.styles if name != api.renderer_style]
    parts = {
        "{{title}}": html.escape(page.title),
        "{{styles}}": "\n".join(f'<link rel="stylesheet" href="/static/{html.escape(name)}">' for name in styles),
        "{{nav}}": nav,
        "{{view}}": page.view.read_text(encoding="utf-8").strip(),
        "{{scripts}}": "\n".join(f'<script src="/static/{html.escape(name)}"></script>' for name in scripts),
    }
    text = TEMPLATE
    for key, value in parts.items():
        text = text.replace(key, value)
    return text
