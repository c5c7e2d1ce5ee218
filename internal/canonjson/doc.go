// Package canonjson is the shared canonical JSON under every identity and
// fingerprint of SPEC §10.1: the JSON Canonicalization Scheme (RFC 8785) and
// the content hash H(v) = hex(SHA-256(canonical(v))) they are built from.
package canonjson
