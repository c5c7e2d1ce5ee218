// Command artifacts is a benchmark of the artifact layer (package artifact)
// on the local store, outside the product's data flow (issue #11 speed
// point): it writes, and reads back with full verification, a rows × cols
// float32 endpoint generated batch by batch, so the process never holds the
// endpoint in memory. run.sh compares it with cp of the same bytes and
// records peak RSS with GNU time.
//
//	artifacts write STORE_DIR [rows cols]   write the endpoint at key bench/endpoint
//	artifacts read  STORE_DIR               stream it back, verifying size, SHA-256 and shape
package main
