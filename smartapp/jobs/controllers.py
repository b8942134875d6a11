"""The launch's landing page and its job: state, retry, and progress as Server-Sent Events.

A job is seen only from a launch for its patient on its EHR (``smartapp.launch.guards``). The
progress stream is fed by the progress bus (in this process or, at scale, by NOTIFY from the
worker running the job) and polls the job row when it hears nothing, so it ends with the job
wherever that ran.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import Provide
from litestar.params import FromPath
from litestar.response import Redirect, Response, ServerSentEvent, ServerSentEventMessage
from litestar.types import Dependencies

from pipeline.text.rendering import render
from smartapp.access.sessions import LaunchContext
from smartapp.core.csrf import csrf_checked_form, csrf_token
from smartapp.core.limits import SMALL_FORM_BYTES
from smartapp.core.responses import html
from smartapp.core.statuses import JobState
from smartapp.core.tables import DraftRow, JobRow
from smartapp.drafts.writing import WRITE_BACK_WORDS
from smartapp.jobs.service import JobService, job_view
from smartapp.launch.guards import SeenJob, launched_for_job, visible_job
from smartapp.state import Jobs, Provenote

# What a progress stream tells the browser when this process stops: reconnect after this long.
RECONNECT_MS = 1000


async def _next_news(
    queue: asyncio.Queue[dict[str, Any]], stopping: asyncio.Event, timeout_s: float
) -> dict[str, Any] | None:
    """The job's next progress; None after ``timeout_s`` of silence, or as soon as the
    process is stopping."""
    if stopping.is_set():
        return None
    news = asyncio.ensure_future(queue.get())
    stop = asyncio.ensure_future(stopping.wait())
    done, pending = await asyncio.wait(
        {news, stop}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
    )
    for task in pending:
        task.cancel()
    return news.result() if news in done else None


async def _latest_job(
    jobs: JobService, context: LaunchContext | None
) -> tuple[JobRow | None, DraftRow | None]:
    """The newest job for the launch context's patient and encounter (it may be shared)."""
    if context is None or not context.patient:
        return None, None
    job = await jobs.latest_for(context.iss, context.patient, context.encounter)
    draft = await jobs.draft_of(job.id) if job is not None else None
    return job, draft


class LandingController(Controller):
    @get("/")
    async def landing(
        self, provenote: Provenote, jobs: Jobs, request: Request[Any, Any, Any]
    ) -> Response[str]:
        session_id = request.cookies.get(provenote.session_cookie)
        context = await provenote.store.context(session_id)
        job, draft = await _latest_job(jobs, context)
        style = await provenote.styles.get(context.smart_style_url if context else None)
        page = render(
            "app/landing.html.j2",
            context=context,
            job=job,
            draft=draft,
            write_back=await provenote.drafts.write_back_of(draft.id) if draft else None,
            write_back_words=WRITE_BACK_WORDS,
            smart_style=style,
            csrf=csrf_token(provenote.secret, session_id) if context and session_id else "",
        )
        return html(page)


class JobController(Controller):
    path = "/jobs/{job_id:str}"
    guards = (launched_for_job,)
    # Litestar's own (mutable) attribute, as Litestar declares it.
    dependencies: Dependencies | None = {  # noqa: RUF012
        "visible": Provide(visible_job, sync_to_thread=False)
    }

    @get("/")
    async def job_api(self, jobs: Jobs, visible: SeenJob, job_id: FromPath[str]) -> dict[str, Any]:
        draft = await jobs.draft_of(job_id)
        return job_view(visible.job) | {"draft": draft.id if draft else None}

    @post("/retry", request_max_body_size=SMALL_FORM_BYTES)
    async def job_retry(
        self,
        provenote: Provenote,
        jobs: Jobs,
        visible: SeenJob,
        request: Request[Any, Any, Any],
        job_id: FromPath[str],
    ) -> Response[Any]:
        if await csrf_checked_form(request, provenote.secret, visible.session_id) is None:
            return Response({"error": "missing or wrong CSRF token"}, status_code=403)
        retried = await jobs.retry(job_id)
        if request.headers.get("accept", "").startswith("text/html"):
            return Redirect("/", status_code=303)
        return Response(job_view(retried or visible.job), status_code=202)

    @get("/events")
    async def job_events(
        self, provenote: Provenote, jobs: Jobs, visible: SeenJob, job_id: FromPath[str]
    ) -> Response[Any] | ServerSentEvent:
        session_id = visible.session_id
        streams = provenote.event_streams
        if streams[session_id] >= provenote.settings.max_event_streams:
            return Response(
                {"error": "too many progress streams open for this session"},
                status_code=429,
                headers={"retry-after": "5"},
            )
        streams[session_id] += 1

        async def stream() -> AsyncGenerator[ServerSentEventMessage, None]:
            queue = jobs.listen(job_id)
            try:
                current = await jobs.get(job_id)
                view = job_view(current) if current is not None else {}
                yield ServerSentEventMessage(data=json.dumps(view), event="progress")
                while view.get("state") not in {JobState.DONE, JobState.FAILED}:
                    news = await _next_news(queue, provenote.stopping, 15)
                    if news is not None:
                        view = news
                        yield ServerSentEventMessage(data=json.dumps(view), event="progress")
                        continue
                    if provenote.stopping.is_set():
                        # This process is stopping: the browser reconnects, to another one.
                        yield ServerSentEventMessage(
                            data="{}", event="reconnect", retry=RECONNECT_MS
                        )
                        return
                    # No news: the job may have ended in another process, or the session.
                    current = await jobs.get(job_id)
                    view = job_view(current) if current else {"state": JobState.FAILED}
                    if await provenote.store.stored_context(session_id) is None:
                        break
                yield ServerSentEventMessage(data=json.dumps(view), event="progress")
            finally:
                jobs.unlisten(job_id, queue)
                streams[session_id] -= 1

        return ServerSentEvent(stream())
