"""How large a request body each kind of route accepts (bytes), so that no form makes the app
parse megabytes: Litestar refuses a larger body with 413 before it is read whole."""

# A form of a few hidden fields: sign-out, sign, retry, the sign preview.
SMALL_FORM_BYTES = 16 * 1024
# A review action or a live check: the sentence as edited, with room for long sentences.
EDIT_FORM_BYTES = 64 * 1024
# Anything else (the FHIR API's JSON bodies included).
DEFAULT_BODY_BYTES = 1024 * 1024
