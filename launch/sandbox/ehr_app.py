"""The sandbox EHR's web side: the SMART authorization endpoints and the chart page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import httpx
from litestar import Litestar, Request, get, post
from litestar.params import FromQuery
from litestar.response import Redirect, Response

from launch.sandbox.authorization import AuthorizationServer
from launch.sandbox.cds_client import CdsClient
from launch.sandbox.clients import OAuthError
from pipeline.text.rendering import render


def _html(template: str, status: int = 200, **context: Any) -> Response[str]:
    return Response(render(template, **context), status_code=status, media_type="text/html")


def _name(patient: dict[str, Any]) -> str:
    for name in patient.get("name", []):
        parts = [*name.get("given", []), name.get("family", "")]
        if any(parts):
            return " ".join(part for part in parts if part)
    return patient.get("id", "unnamed")


# The sandbox EHR's look, for apps that follow SMART's styling.
SMART_STYLE = {
    "color_background": "#fbfcfe",
    "color_highlight": "#0b5cad",
    "color_text": "#1d2733",
    "dim_border_radius": "4px",
    "font_family_body": "system-ui, sans-serif",
}


def _listed_encounter(encounter: dict[str, Any]) -> dict[str, Any]:
    period = encounter.get("period", {})
    return {
        "id": encounter["id"],
        "class_code": encounter.get("class", {}).get("code", ""),
        "type": "; ".join(t.get("text", "") for t in encounter.get("type", [])),
        "start": period.get("start", "?")[:10],
        "end": period.get("end", "ongoing")[:10],
    }


async def _chart_patients(fhir_base: str, admin_token: str) -> list[dict[str, Any]]:
    """Every patient of the sandbox's FHIR server, with their encounters, newest first."""
    headers = {"x-admin-token": admin_token}
    listed = []
    async with httpx.AsyncClient(base_url=fhir_base, headers=headers, timeout=30) as fhir:
        patients = (await fhir.get("/Patient", params={"_count": 200})).json().get("entry", [])
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
                    "encounters": [_listed_encounter(e) for e in encounters],
                }
            )
    return listed


def _authorization_routes(server: AuthorizationServer, hooks: CdsClient) -> list[Any]:
    """/auth: SMART's authorize, token and JWKS endpoints, and the styling it offers apps."""

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
        return SMART_STYLE

    @get("/auth/cds-jwks")
    async def cds_jwks() -> dict[str, Any]:
        """The keys that sign the chart's CDS Hooks calls."""
        return hooks.jwks()

    return [authorize_get, authorize_post, token, jwks, smart_style, cds_jwks]


def _chart_routes(
    server: AuthorizationServer,
    fhir_base: str,
    admin_token: str,
    app_launch_url: Callable[[], str],
    hooks: CdsClient,
) -> list[Any]:
    """The chart: its page, its launch of the app, and its Start discharge (the hook)."""

    @get("/chart")
    async def chart(framed: FromQuery[bool] = False) -> Response[str]:
        """The chart; ``?framed=true`` shows the app inside the chart's page, in an iframe, as
        web EHRs do (the app is then another site's document in this one's frame)."""
        return _html(
            "sandbox/chart.html.j2",
            patients=await _chart_patients(fhir_base, admin_token),
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
            str(form.get("app_context")) if form.get("app_context") else None,
        )
        query = urlencode({"iss": fhir_base, "launch": launch_id})
        return Redirect(f"{app_launch_url()}?{query}", status_code=303)

    @post("/chart/discharge")
    async def discharge(request: Request, framed: FromQuery[bool] = False) -> Response[str]:
        """The chart's Start discharge: it calls the app's encounter-discharge hook and shows the
        cards it answers, each link a launch with the card's appContext."""
        form = await request.form()
        patient, encounter = str(form.get("patient", "")), str(form.get("encounter", ""))
        app_base = app_launch_url().removesuffix("/launch")
        answer = await hooks.discharge(app_base, patient, encounter, server.practitioner)
        return _html(
            "sandbox/cards.html.j2",
            answer=answer,
            patient=patient,
            encounter=encounter,
            launch_action="/chart/launch",
            framed=framed,
        )

    return [chart, launch, discharge]


def create_ehr_app(
    server: AuthorizationServer,
    *,
    fhir_base: str,
    admin_token: str,
    app_launch_url: Callable[[], str],
    hooks: CdsClient,
) -> Litestar:
    """Routes under /auth (authorize, token, jwks) and /chart, bound to one server instance.

    ``app_launch_url`` is asked at each launch, so the app a chart launches can be changed; the
    app's CDS services are found beside it (its launch URL without ``/launch``).
    """
    charts = _chart_routes(server, fhir_base, admin_token, app_launch_url, hooks)
    return Litestar(
        route_handlers=[*_authorization_routes(server, hooks), *charts],
        debug=False,
        logging_config=None,
    )
