package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestLogger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env         string
		warn, debug bool
		wantErr     bool
	}{
		{"", false, false, false},
		{"debug", true, true, false},
		{"WARN", true, false, false},
		{"error", false, false, false},
		{"loud", false, false, true},
	} {
		var buf bytes.Buffer
		l, err := logger(tc.env, &buf)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), EnvLog) {
				t.Errorf("%q: error %v, want one naming %s", tc.env, err, EnvLog)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.env, err)
		}
		ctx := context.Background()
		if got := l.Enabled(ctx, slog.LevelWarn); got != tc.warn {
			t.Errorf("%q: warn enabled %v, want %v", tc.env, got, tc.warn)
		}
		if got := l.Enabled(ctx, slog.LevelDebug); got != tc.debug {
			t.Errorf("%q: debug enabled %v, want %v", tc.env, got, tc.debug)
		}
		l.Warn("w")
		if (buf.Len() > 0) != tc.warn {
			t.Errorf("%q: wrote %q", tc.env, buf.String())
		}
	}
}
