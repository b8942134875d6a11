"""The sandbox EHR's web side: the SMART authorization endpoints and the chart page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import httpx
from litestar import Litestar, Request, get, post
from litestar.params import FromQuery
from litestar.response import Redirect, Response

from launch.sandbox.authorization import AuthorizationServer, OAuthError
from pipeline.text.rendering import render


def _html(template: str, status: int = 200, **context: Any) -> Response[str]:
    return Response(render(template, **context), status_code=status, media_type="text/html")


def _name(patient: dict[str, Any]) -> str:
    for name in patient.get("name", []):
        parts = [*name.get("given", []), name.get("family", "")]
        if any(parts):
            return " ".join(part for part in parts if part)
    return patient.get("id", "unnamed")


def create_ehr_app(
    server: AuthorizationServer,
    *,
    fhir_base: str,
    admin_token: str,
    app_launch_url: Callable[[], str],
) -> Litestar:
    """Routes under /auth (authorize, token, jwks) and /chart, bound to one server instance.

    ``app_launch_url`` is asked at each launch, so the app a chart launches can be changed.
    """

    async def authorize(params: dict[str, str]) -> Response[Any]:
        try:
            return Redirect(server.authorize(params), status_code=302)
        except OAuthError as error:
            return _html(
                "sandbox/error.html.j2",
                error.status,
                error=error.error,
                description=error.description,
            )

    @get("/auth/authorize")
    async def authorize_get(request: Request) -> Response[Any]:
        return await authorize(dict(request.query_params))

    @post("/auth/authorize")
    async def authorize_post(request: Request) -> Response[Any]:
        return await authorize(dict(await request.form()))

    @post("/auth/token")
    async def token(request: Request) -> Response[Any]:
        form = {key: str(value) for key, value in (await request.form()).items()}
        headers = {"cache-control": "no-store", "pragma": "no-cache"}
        try:
            answer = await server.token(form, request.headers.get("authorization"))
        except OAuthError as error:
            return Response(error.as_json(), status_code=error.status, headers=headers)
        return Response(answer, status_code=200, headers=headers)

    @get("/auth/jwks")
    async def jwks() -> dict[str, Any]:
        return server.jwks()

    @get("/auth/smart-style.json")
    async def smart_style() -> dict[str, Any]:
        return {
            "color_background": "#fbfcfe",
            "color_highlight": "#0b5cad",
            "color_text": "#1d2733",
            "dim_border_radius": "4px",
            "font_family_body": "system-ui, sans-serif",
        }

    @get("/chart")
    async def chart(framed: FromQuery[bool] = False) -> Response[str]:
        """The chart; ``?framed=true`` shows the app inside the chart's page, in an iframe, as
        web EHRs do (the app is then another site's document in this one's frame)."""
        headers = {"x-admin-token": admin_token}
        async with httpx.AsyncClient(base_url=fhir_base, headers=headers, timeout=30) as fhir:
            patients = (await fhir.get("/Patient", params={"_count": 200})).json().get("entry", [])
            listed = []
            for entry in patients:
                patient = entry["resource"]
                found = await fhir.get(
                    "/Encounter", params={"patient": f"Patient/{patient['id']}", "_count": 500}
                )
                encounters = [e["resource"] for e in found.json().get("entry", [])]
                encounters.sort(key=lambda e: e.get("period", {}).get("start", ""), reverse=True)
                listed.append(
                    {
                        "id": patient["id"],
                        "name": _name(patient),
                        "gender": patient.get("gender"),
                        "birth_date": patient.get("birthDate"),
                        "encounters": [
                            {
                                "id": e["id"],
                                "class_code": e.get("class", {}).get("code", ""),
                                "type": "; ".join(t.get("text", "") for t in e.get("type", [])),
                                "start": e.get("period", {}).get("start", "?")[:10],
                                "end": e.get("period", {}).get("end", "ongoing")[:10],
                            }
                            for e in encounters
                        ],
                    }
                )
        return _html(
            "sandbox/chart.html.j2",
            patients=listed,
            practitioner=server.practitioner,
            fhir_base=fhir_base,
            launch_action="/chart/launch",
            framed=framed,
        )

    @post("/chart/launch")
    async def launch(request: Request) -> Redirect:
        form = await request.form()
        launch_id = server.new_launch(
            f"Patient/{form.get('patient')}",
            f"Encounter/{form.get('encounter')}" if form.get("encounter") else None,
            str(form.get("user")) if form.get("user") else None,
        )
        query = urlencode({"iss": fhir_base, "launch": launch_id})
        return Redirect(f"{app_launch_url()}?{query}", status_code=303)

    return Litestar(
        route_handlers=[authorize_get, authorize_post, token, jwks, smart_style, chart, launch],
        debug=False,
        logging_config=None,
    )
