"""A family's card styles (`Api.renderer_style`) reach both places its renderer draws: the served
pages link the stylesheet, and `attnkit report` inlines it after the core's."""

from __future__ import annotations

from attnkit.families import FAMILIES
from attnkit.serve.pages import render_page
from attnkit.viz.report import render_report, template

STYLED = [family.api for family in FAMILIES.values() if family.api.renderer_style]


def test_families_that_draw_their_own_cards_style_them():
    assert {api.renderer for api in STYLED} == {family.api.renderer for family in FAMILIES.values() if family.api.renderer}
    assert all(api.renderer_css().strip() for api in STYLED)


def test_pages_link_and_reports_inline_the_family_styles():
    for api in STYLED:
        for page in api.pages.values():
            html = render_page(page, api, "")
            assert html.count(f'href="/static/{api.renderer_style}"') == 1
        report = render_report([], "t", api.renderer_script(), style=api.renderer_css())
        assert template("attention.css") + api.renderer_css() in report
