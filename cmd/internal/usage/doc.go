// Package usage classifies errors where they leave the product, at the CLI
// and the C ABI: it tells which library errors mean that the caller
// configured a run wrongly — an option, a configuration field, an output
// target — rather than that its input is bad. The CLI exits 2 for them and
// the C ABI returns its usage code; both ask IsConfig, so they agree.
package usage
