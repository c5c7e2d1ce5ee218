package blobstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/logging"
)

// Network limits an object store's requests. A stalled server (alive but
// not answering, as a SIGSTOPped or overloaded one is) must fail a command
// with a message, never hang it, so every connection carries an idle
// deadline and every request a deadline for its answer, and failed
// requests are retried a bounded number of times with backoff. Each limit
// is a URI query parameter of the store (s3://bucket/prefix?idle_timeout=10s).
type Network struct {
	// Timeout bounds connecting (TCP and TLS) and, once a request has been
	// sent, the wait for its response headers (URI parameter timeout).
	Timeout time.Duration
	// IdleTimeout is the longest a connection may move no byte, in either
	// direction, while a request or a response body is pending (URI
	// parameter idle_timeout). It bounds a stall of any transfer, however
	// large, without bounding the transfer's total time.
	IdleTimeout time.Duration
	// MaxAttempts is how many times one request is tried (URI parameter
	// max_attempts; s3:// only: the GCS library keeps its own policy).
	MaxAttempts int
	// MaxBackoff caps the exponential, jittered wait between attempts (URI
	// parameter max_backoff; s3:// only).
	MaxBackoff time.Duration
}

// DefaultNetwork is what a store URI without the parameters gets: a
// stalled server fails a request after IdleTimeout, and an operation after
// about MaxAttempts × IdleTimeout plus the backoff (≈ 2.5 minutes).
var DefaultNetwork = Network{
	Timeout:     time.Minute,
	IdleTimeout: 30 * time.Second,
	MaxAttempts: 5,
	MaxBackoff:  20 * time.Second,
}

// The URI query parameters Network reads; they are removed before the
// query reaches the gocloud driver.
const (
	paramTimeout     = "timeout"
	paramIdleTimeout = "idle_timeout"
	paramMaxAttempts = "max_attempts"
	paramMaxBackoff  = "max_backoff"
)

// networkFromQuery takes the Network parameters out of q.
func networkFromQuery(q url.Values) (Network, error) {
	n := DefaultNetwork
	durations := []struct {
		key string
		dst *time.Duration
	}{{paramTimeout, &n.Timeout}, {paramIdleTimeout, &n.IdleTimeout}, {paramMaxBackoff, &n.MaxBackoff}}
	for _, d := range durations {
		if !q.Has(d.key) {
			continue
		}
		v := q.Get(d.key)
		q.Del(d.key)
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 || x > 24*time.Hour {
			return n, fmt.Errorf("query parameter %s=%q: want a duration between 1ms and 24h, such as 30s or 2m", d.key, v)
		}
		*d.dst = x
	}
	if q.Has(paramMaxAttempts) {
		v := q.Get(paramMaxAttempts)
		q.Del(paramMaxAttempts)
		x, err := strconv.Atoi(v)
		if err != nil || x < 1 || x > 100 {
			return n, fmt.Errorf("query parameter %s=%q: want a whole number of attempts from 1 to 100", paramMaxAttempts, v)
		}
		n.MaxAttempts = x
	}
	return n, nil
}

// transport is an HTTP transport with n's deadlines.
func (n Network) transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: n.Timeout, KeepAlive: 30 * time.Second}
	idle := n.IdleTimeout
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &idleConn{Conn: c, idle: idle}, nil
	}
	t.TLSHandshakeTimeout = n.Timeout
	t.ResponseHeaderTimeout = n.Timeout
	// A pooled connection is closed before its pending read (the
	// transport's wait for the next response) reaches the idle deadline.
	t.IdleConnTimeout = min(90*time.Second, idle/2)
	return t
}

// IdleTimeoutError is a connection that moved no byte for Idle while a
// request or response was pending. It is a timeout (net.Error), which the
// retry policy retries.
type IdleTimeoutError struct {
	Idle time.Duration
	Err  error // the connection's own error (an i/o timeout)
}

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("no data moved for %v (idle_timeout=%v): %v", e.Idle, e.Idle, e.Err)
}
func (e *IdleTimeoutError) Unwrap() error   { return e.Err }
func (e *IdleTimeoutError) Timeout() bool   { return true }
func (e *IdleTimeoutError) Temporary() bool { return true }

// idleConn is a connection whose reads and writes fail once no byte has
// moved, in either direction, for idle. Progress in one direction extends
// a pending call in the other: an upload's body writes keep the wait for
// its response alive, and a download's reads need no writes.
type idleConn struct {
	net.Conn
	idle     time.Duration
	last     atomic.Int64 // unix nanoseconds of the last extension
	timedOut atomic.Bool
}

// extend moves the deadline to idle from now. Setting a deadline is cheap
// but not free, so it is skipped when the last extension is recent (the
// deadline then falls between idle×15/16 and idle from now).
func (c *idleConn) extend() {
	now := time.Now()
	if last := c.last.Load(); last != 0 && now.UnixNano()-last < int64(c.idle/16) {
		return
	}
	c.last.Store(now.UnixNano())
	c.Conn.SetDeadline(now.Add(c.idle))
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.extend()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.extend()
	}
	return n, c.wrap(err)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.extend()
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.extend()
	}
	return n, c.wrap(err)
}

// wrap reports a deadline as an IdleTimeoutError, and so every later
// error of the connection (the transport closes it after the timeout, and
// a write racing that close would otherwise say only "use of closed
// network connection").
func (c *idleConn) wrap(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.timedOut.Store(true)
		return &IdleTimeoutError{Idle: c.idle, Err: err}
	}
	if c.timedOut.Load() {
		return &IdleTimeoutError{Idle: c.idle, Err: err}
	}
	return err
}

// sdkLogger routes the AWS SDK's log lines (its WARN and DEBUG
// classifications) to log/slog, so they appear only where the program
// asked for logs (the CLI: VERTEBRAE_LOG), never on a bare stderr.
var sdkLogger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l := slog.Default()
	if !l.Enabled(context.Background(), level) {
		return
	}
	l.Log(context.Background(), level, fmt.Sprintf(format, v...), "source", "aws-sdk")
})
