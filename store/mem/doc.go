// Package mem is an in-process object store for tests (SPEC §10.5 mem://),
// the backend store/location opens for mem://NAME.
package mem
