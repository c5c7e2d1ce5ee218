// Package location opens the artifact store a URI names (SPEC §10.5,
// `--store URI` and `store:` in a run file), for the CLI and the Beam
// module: a plain path or file:// URI is the local disk store, mem://NAME an
// in-process store shared by every Open of the same NAME in this process
// (tests), s3:// and gs:// an object store bucket and prefix. Anything else
// is a *store.UnsupportedURIError.
//
// It is its own package so that store itself imports no backend (the
// backends import store).
package location
