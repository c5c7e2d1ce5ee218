// Package endpointcache is the endpoint cache of local runs (SPEC §9.5): an
// artifact store (package artifact), used as evaluate.Benchmark's
// extract.EndpointCache, that an endpoint is loaded from instead of being
// encoded and saved to once it is encoded. Endpoints of
// cache-eligible extractors live under their canonical keys (SPEC §10.4) as
// retrieval_embedding artifacts, the same ones `plan` reports as hits and
// `merge` writes, so a distributed extraction and a local run share one cache.
package endpointcache
