// Package memory holds the memory configuration of a run (SPEC §7.1) and
// resolves it into a resident-memory budget in bytes (SPEC §7.2), which
// memory/admit admits the encoded endpoints against and which, carried in
// the context, guards the data-sized allocations of scoring and
// compression.
package memory
