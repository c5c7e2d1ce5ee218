package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Error is an input-file error. It renders as "<path>:<line>: <msg>" for text
// formats (Line > 0) and "<path>: <msg>" for binary formats (SPEC §6.4).
type Error struct {
	Path string
	Line int // 1-based; 0 when not applicable
	Msg  string
	Err  error // optional cause
}

func (e *Error) Error() string {
	msg := e.Msg
	if e.Err != nil {
		if msg == "" {
			msg = e.Err.Error()
		} else {
			msg += ": " + e.Err.Error()
		}
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error for a binary file.
func Errorf(path string, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// LineErrorf builds an *Error for a line of a text file.
func LineErrorf(path string, line int, format string, args ...any) error {
	return &Error{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// IsInputError reports whether err is (or wraps) a file error.
func IsInputError(err error) bool {
	var fe *Error
	return errors.As(err, &fe)
}

// ContextReader returns a reader of r whose every Read first checks ctx and
// fails with ctx's error once ctx is done: a parser reading through it (in
// blocks of its buffer size) stops soon after an interrupt.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
