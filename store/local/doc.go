// Package local is the local-disk object store under the artifact layer
// (SPEC §10.5: a plain path or file:// URI, opened through store/location).
// Object names map to files under the root directory.
//
// Durability: Put streams into a temporary file in the object's own
// directory (a unique name, so concurrent writers of one object never share
// a file), fsyncs it, renames it over the object atomically and fsyncs the
// directory, so after Put returns the object survives a power loss and a
// reader sees either the previous content or the complete new content. A
// failed, short or cancelled Put removes its temporary file and leaves the
// previous object untouched. New directories are fsynced into their parent
// too. This is why the store is ours and not gocloud's fileblob, which
// never fsyncs.
//
// A process killed in the middle of a Put leaves a temporary file (named
// TempPrefix + random) that List never reports; RemoveStaleTemp deletes
// them.
package local
