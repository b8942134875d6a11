// Who may see what on the sandbox EHR's FHIR server: SMART access tokens (RS256, from the sandbox
// authorization server), the admin secret, SMART scopes, and a patient's compartment.
//
// Configuration (environment): TOKEN_PUBLIC_KEY, TOKEN_ISSUER, PUBLIC_BASE and ADMIN_TOKEN, as
// server.mjs describes them.

import { createPublicKey, timingSafeEqual, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';

const env = process.env;
const PUBLIC_BASE = env.PUBLIC_BASE ?? '';
const ADMIN_TOKEN = env.ADMIN_TOKEN ?? '';
const TOKEN_KEY = env.TOKEN_PUBLIC_KEY ? createPublicKey(readFileSync(env.TOKEN_PUBLIC_KEY)) : null;

function base64url(text) {
  return Buffer.from(text, 'base64url');
}

// Verifies an RS256 JWT access token issued by the sandbox authorization server.
export function verifyToken(token) {
  if (!TOKEN_KEY) return null;
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  let header;
  let claims;
  try {
    header = JSON.parse(base64url(parts[0]).toString('utf8'));
    claims = JSON.parse(base64url(parts[1]).toString('utf8'));
  } catch {
    return null;
  }
  if (header.alg !== 'RS256') return null;
  const signed = verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), TOKEN_KEY, base64url(parts[2]));
  if (!signed) return null;
  const now = Math.floor(Date.now() / 1000);
  if (typeof claims.exp !== 'number' || claims.exp <= now) return null;
  if (env.TOKEN_ISSUER && claims.iss !== env.TOKEN_ISSUER) return null;
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (PUBLIC_BASE && !audiences.includes(PUBLIC_BASE)) return null;
  return claims;
}

export function isAdmin(req) {
  const given = Buffer.from(String(req.headers['x-admin-token'] ?? ''));
  const expected = Buffer.from(ADMIN_TOKEN);
  return ADMIN_TOKEN.length > 0 && given.length === expected.length && timingSafeEqual(given, expected);
}

// SMART scopes, v1 (patient/*.read) and v2 (patient/Observation.rs), as {context, type, perms}.
export function parseScopes(scope) {
  const parsed = [];
  for (const item of String(scope ?? '').split(/\s+/)) {
    const match = /^(patient|user|system)\/([A-Za-z*]+)\.([a-z*]+)(\?.*)?$/.exec(item);
    if (!match) continue;
    const [, context, type, action] = match;
    let perms;
    if (action === 'read') perms = 'rs';
    else if (action === 'write') perms = 'cud';
    else if (action === '*') perms = 'cruds';
    else perms = action;
    parsed.push({ context, type, perms: new Set(perms) });
  }
  return parsed;
}

export function permits(scopes, resourceType, perm) {
  return scopes.some((s) => (s.type === '*' || s.type === resourceType) && s.perms.has(perm));
}

function patientReferences(value, found = new Set()) {
  if (Array.isArray(value)) {
    for (const item of value) patientReferences(item, found);
  } else if (value && typeof value === 'object') {
    if (typeof value.reference === 'string' && value.reference.startsWith('Patient/')) {
      found.add(value.reference.split('/')[1]);
    }
    for (const item of Object.values(value)) patientReferences(item, found);
  }
  return found;
}

// In the patient's compartment, or a shared resource (Medication, Practitioner...) naming no patient.
export function visibleTo(patientId, resource) {
  if (!resource || !patientId) return true;
  if (resource.resourceType === 'Patient') return resource.id === patientId;
  const patients = patientReferences(resource);
  return patients.size === 0 || (patients.size === 1 && patients.has(patientId));
}
