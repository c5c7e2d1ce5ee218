// Package confval is a shared helper of the configuration decoders (the
// retrieval, memory and compression configs): it converts the values that
// JSON and YAML decoders produce (json.Number, int64, float64, …), so that
// every config section accepts the same spellings and reports type errors
// the same way ("<Section>.<field> must be an integer; got string \"x\"").
package confval
