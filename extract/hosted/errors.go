package hosted

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxBodyInError bounds the response body quoted in errors (SPEC §9.4).
const maxBodyInError = 512

// errMismatch prefixes every response-validation failure (SPEC §9.4).
var errMismatch = errors.New("hosted response did not match the request")

// StatusError is an HTTP failure: a non-retryable status, or the last
// retryable status once the retries are exhausted.
type StatusError struct {
	StatusCode int
	Status     string // e.g. "503 Service Unavailable"
	Body       string // at most 512 bytes of the body, key redacted
	Attempts   int    // attempts made for the batch, this one included
}

func (e *StatusError) Error() string {
	msg := "HTTP " + e.Status
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// retryable reports the statuses SPEC §9.4 retries; other 5xx (501, 505,
// ...) are not transient and fail at once like 4xx.
func retryable(code int) bool {
	switch code {
	case 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// snippet trims body to maxBodyInError bytes on a rune boundary and
// removes the key, in case the server echoes request headers.
func snippet(body []byte, key string) string {
	s := string(body)
	if key != "" {
		s = strings.ReplaceAll(s, key, "[REDACTED]")
	}
	s = strings.TrimSpace(s)
	if len(s) <= maxBodyInError {
		return s
	}
	cut := maxBodyInError
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "...(truncated)"
}

// redactedError hides the key in a message while keeping the chain for
// errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// scrub is the last line of defence: no error leaves the package with the
// key in its message, whatever a server or transport put there.
func (c *Client) scrub(err error) error {
	if err == nil || c.key == "" {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, c.key) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, c.key, "[REDACTED]"), err: err}
}

func mismatchf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMismatch, fmt.Sprintf(format, args...))
}
