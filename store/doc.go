// Package store is the object-store interface under the artifact layer
// (SPEC §10.5): a flat namespace of immutable objects addressed by
// '/'-separated names, implemented by store/local, store/mem and
// store/blobstore (s3://, gs://) and opened by URI through store/location.
// Keys, manifests and artifact kinds live above it (package artifact);
// cross-cutting behaviour (fault injection for tests, verification) wraps
// the one interface, Store.
package store
