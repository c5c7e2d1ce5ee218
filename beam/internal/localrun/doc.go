// Package localrun is a test helper of the Beam module: it runs `vertebrae
// retrieval run --spec` as the Beam tests' trusted single-process
// evaluator, the vertebrae binary of this checkout built once per test
// process, so the Beam module depends on the library only, never on the
// CLI's code.
package localrun
