package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// EnvLog names the environment variable that turns on diagnostic log
// lines on stderr (debug, info, warn or error: the lowest level shown).
// Unset, nothing is logged: libraries' own warnings (the AWS SDK's, for
// example) never mix with the CLI's messages.
const EnvLog = "VERTEBRAE_LOG"

// logger returns the process's slog logger for the EnvLog value v.
func logger(v string, stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return slog.New(slog.DiscardHandler), nil
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("%s=%q: want debug, info, warn or error (or unset for no log lines)", EnvLog, v)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}
