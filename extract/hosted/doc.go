// Package hosted is the client behind the hosted-embedding extractors
// (SPEC §9.4) that runspec builds from a run file: it embeds texts through
// OpenAI-compatible servers (POST <base_url>/embeddings), Ollama
// (POST <base_url>/api/embed) and Text Embeddings Inference
// (POST <base_url>/embed).
//
// A Client splits texts into batches, runs a bounded number of requests at
// once, retries transient failures with capped exponential backoff and full
// jitter, validates every response and assembles the rows in input order,
// so the output does not depend on which request finished first. An
// optional content-addressed cache keeps one file per text vector, so an
// interrupted run resumes without repeating completed requests.
//
// The API key is read from the environment once, sent only as an
// Authorization: Bearer header, and never written to errors, recipes or
// cache files.
package hosted
