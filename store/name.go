package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// InvalidNameError reports an object name a backend refuses. Names follow
// the key rules of SPEC §10.4 (relative, '/'-separated, no empty, "." or
// ".." component, no '\' or control character), so a name can never escape
// a local store's root or mean different objects on different backends.
// The artifact layer rejects bad keys first with its own "invalid artifact
// key" error; this is the backend's last line of defence.
type InvalidNameError struct {
	Name   string
	Reason string
}

func (e *InvalidNameError) Error() string {
	return fmt.Sprintf("invalid object name %q: %s", e.Name, e.Reason)
}

// ValidateName checks name against the object name rules and returns an
// *InvalidNameError when it breaks one. "a..b", "a__b", spaces and any
// printable Unicode are legal.
//
// One more rule is not checked here because it concerns two names, not
// one: no name may be a '/'-prefix of another ("a/b" and "a/b/c"). Object
// stores allow the pair, the local store cannot (a path is a file or a
// directory), and the artifact layout never produces it (a key's objects
// are its manifest and data files, child keys nest beside them).
func ValidateName(name string) error {
	bad := func(reason string) error { return &InvalidNameError{Name: name, Reason: reason} }
	switch {
	case name == "":
		return bad("empty")
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.HasPrefix(name, "/"):
		return bad("starts with '/' (names are relative)")
	case strings.HasSuffix(name, "/"):
		return bad("ends with '/'")
	case strings.ContainsRune(name, '\\'):
		return bad(`contains '\'`)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return bad(fmt.Sprintf("contains control character %U", r))
		}
	}
	for c := range strings.SplitSeq(name, "/") {
		switch c {
		case "":
			return bad("has an empty component ('//')")
		case ".", "..":
			return bad(fmt.Sprintf("has a %q component", c))
		}
	}
	return nil
}
