package artifact

import "errors"

// Sentinel errors; every *Error wraps one of them (or a store error), so
// callers branch with errors.Is while the message keeps the SPEC fragment.
var (
	ErrInvalidKey      = errors.New("invalid artifact key")
	ErrInvalidManifest = errors.New("invalid manifest")
	ErrNotFound        = errors.New("artifact does not exist")
	ErrTruncated       = errors.New("truncated")
	ErrSizeMismatch    = errors.New("size mismatch")
	ErrChecksum        = errors.New("checksum mismatch")
	ErrMismatch        = errors.New("does not match its manifest")
	ErrInvalidMetadata = errors.New("invalid artifact metadata")
	// ErrCheck is a failed artifact scoring or reconstruction check
	// (SPEC §10.7, §10.8).
	ErrCheck = errors.New("artifact check failed")
)

// Error is a failure tied to one artifact key.
type Error struct {
	Key string
	Msg string // contains the SPEC fragment
	Err error  // sentinel or cause
}

func (e *Error) Error() string {
	msg := "artifact " + e.Key + ": " + e.Msg
	if e.Err != nil && !isSentinel(e.Err) {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

func isSentinel(err error) bool {
	for _, s := range []error{ErrInvalidKey, ErrInvalidManifest, ErrNotFound, ErrTruncated, ErrSizeMismatch,
		ErrChecksum, ErrMismatch, ErrInvalidMetadata, ErrCheck} {
		if err == s {
			return true
		}
	}
	return false
}

func keyErr(key string, sentinel error, msg string) error {
	return &Error{Key: key, Msg: msg, Err: sentinel}
}
