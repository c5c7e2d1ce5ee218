// Package stale is a shared helper of the writers that stage temporary
// files and directories (the local object store, model preparation): it
// stages them so that what a killed run leaves behind is recognised and
// removed by a later run.
//
// A staged entry carries a name prefix its owner chooses and an exclusive
// advisory lock held for as long as its creator is alive (the kernel drops
// the lock of a killed process). Remove deletes the entries with a prefix
// that are older than the current process and that no live process holds:
// pre-emption in a job array is normal, and a re-run must recover the disk.
package stale
