"""The sandbox EHR: a real FHIR server, a SMART authorization server and a chart, on loopback."""
