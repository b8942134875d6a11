// What the sandbox EHR's FHIR server says of itself: its CapabilityStatement (the resource types it
// serves, which it accepts for write-back under CAPABILITY_PROFILE) and its SMART configuration.
//
// Configuration (environment): PUBLIC_BASE, CAPABILITY_PROFILE, TOKEN_ISSUER and the endpoint URLs,
// as server.mjs describes them.

const env = process.env;
const PUBLIC_BASE = env.PUBLIC_BASE ?? '';
export const PROFILE = env.CAPABILITY_PROFILE ?? 'composition';
const ACCEPTED_STATUS = 'https://provenote.dev/fhir/StructureDefinition/document-status-accepted';
const SUPPORTED_TYPES = [
  'Patient', 'Encounter', 'Condition', 'MedicationRequest', 'Medication', 'AllergyIntolerance',
  'Procedure', 'DiagnosticReport', 'Observation', 'DocumentReference', 'Binary', 'Composition',
  'Provenance', 'Device', 'Practitioner', 'PractitionerRole', 'Organization', 'Location',
];

// What a search may bring with it (_include), and the element each one follows. Medplum's
// in-memory repository does not answer _include, so the wrapper does (withIncludes).
const SEARCH_INCLUDES = { MedicationRequest: ['MedicationRequest:medication'] };
const INCLUDED_ELEMENT = { 'MedicationRequest:medication': 'medicationReference' };

// A searchset with what an offered _include asks for appended (search mode "include"), each
// resource once; references that do not resolve are left out, as a server would.
export async function withIncludes(bundle, type, includes, readReference) {
  const offered = includes.filter((include) => (SEARCH_INCLUDES[type] ?? []).includes(include));
  if (bundle?.type !== 'searchset' || offered.length === 0) return bundle;
  const seen = new Set((bundle.entry ?? []).map((e) => `${e.resource?.resourceType}/${e.resource?.id}`));
  const included = [];
  for (const entry of bundle.entry ?? []) {
    for (const include of offered) {
      const reference = entry.resource?.[INCLUDED_ELEMENT[include]]?.reference;
      if (!reference || seen.has(reference)) continue;
      seen.add(reference);
      try {
        const resource = await readReference({ reference });
        included.push({ fullUrl: `${PUBLIC_BASE}/${reference}`, resource, search: { mode: 'include' } });
      } catch {
        // Not found or not readable: nothing to include.
      }
    }
  }
  return { ...bundle, entry: [...(bundle.entry ?? []), ...included] };
}

export function capabilityStatement() {
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: '2026-11-30',
    kind: 'instance',
    fhirVersion: '4.0.1',
    format: ['application/fhir+json'],
    implementation: { description: 'Provenote sandbox EHR (Medplum fhir-router, in memory)', url: PUBLIC_BASE },
    rest: [
      {
        mode: 'server',
        security: {
          service: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' }] }],
          extension: [
            {
              url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
              extension: [
                { url: 'authorize', valueUri: env.AUTHORIZE_URL },
                { url: 'token', valueUri: env.TOKEN_URL },
              ],
            },
          ],
        },
        resource: SUPPORTED_TYPES.map((type) => {
          const writable = !(type === 'Composition' && PROFILE !== 'composition');
          const codes = ['read', 'vread', 'search-type', ...(writable ? ['create', 'update'] : [])];
          const entry = { type, interaction: codes.map((code) => ({ code })), conditionalCreate: writable, versioning: 'versioned' };
          if (SEARCH_INCLUDES[type]) {
            entry.searchInclude = SEARCH_INCLUDES[type];
          }
          if (type === 'DocumentReference' && PROFILE === 'final-only') {
            entry.extension = [{ url: ACCEPTED_STATUS, valueCode: 'final' }];
          }
          return entry;
        }),
        interaction: [{ code: 'transaction' }, { code: 'batch' }],
      },
    ],
  };
}

export function smartConfiguration() {
  return {
    issuer: env.TOKEN_ISSUER,
    jwks_uri: env.JWKS_URL,
    authorization_endpoint: env.AUTHORIZE_URL,
    token_endpoint: env.TOKEN_URL,
    revocation_endpoint: env.REVOCATION_URL,
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'private_key_jwt', 'none'],
    token_endpoint_auth_signing_alg_values_supported: ['RS384', 'ES384'],
    scopes_supported: ['openid', 'fhirUser', 'launch', 'launch/patient', 'launch/encounter',
      'offline_access', 'online_access', 'patient/*.cruds', 'user/*.cruds', 'system/*.cruds',
      'patient/*.read', 'patient/*.write'],
    authorization_response_iss_parameter_supported: true,
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    capabilities: ['launch-ehr', 'launch-standalone', 'client-public', 'client-confidential-symmetric',
      'client-confidential-asymmetric', 'context-ehr-patient', 'context-ehr-encounter',
      'context-standalone-patient', 'permission-offline', 'permission-online', 'permission-patient',
      'permission-user', 'permission-v1', 'permission-v2', 'sso-openid-connect', 'authorize-post'],
  };
}
