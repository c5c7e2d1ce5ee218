package capi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/usage"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
)

// Code is the result code of an ABI call; 1 and 2 are the CLI's exit codes.
type Code int32

const (
	OK        Code = 0 // success
	Input     Code = 1 // bad input data or a failed evaluation (CLI exit 1)
	Usage     Code = 2 // a bad option or call (CLI exit 2)
	Memory    Code = 3 // the memory budget refused the work (CLI exit 1)
	Cancelled Code = 4 // the caller cancelled the call (CLI exit 130)
	Internal  Code = 5 // a defect: a recovered panic
)

// UsageError is a bad request option: the Python keyword or request key is
// named, as the CLI names its flag.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Classify maps an error of a call running under ctx to its code.
func Classify(ctx context.Context, err error) Code {
	var ue *UsageError
	var mbe *memory.BudgetError
	var ebe *admit.BudgetError
	switch {
	case err == nil:
		return OK
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return Cancelled
	case errors.As(err, &ue), usage.IsConfig(err): // as the CLI's exit 2
		return Usage
	case errors.As(err, &mbe), errors.As(err, &ebe):
		return Memory
	}
	return Input
}

// Message is the text an error is reported with: the CLI's, with
// "interrupted" for a cancelled call, and a configuration field that an
// option sets named as the option ("similarity must be one of …", where the
// CLI says "--similarity must be one of …").
func Message(ctx context.Context, err error) string {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	msg := err.Error()
	for _, m := range optionNames {
		rest := strings.TrimPrefix(msg, m.option+": ")
		if after, ok := strings.CutPrefix(rest, m.field); ok && (after == "" || after[0] == ' ' || after[0] == ':') {
			return m.option + after
		}
	}
	return msg
}

// optionNames maps the configuration fields that request options set to
// the options (the Python keywords).
var optionNames = []struct{ field, option string }{
	{"RetrievalConfig.similarity", "similarity"},
	{"RetrievalConfig.ks", "k"},
	{"RetrievalConfig.primary_metric", "primary"},
	{"RetrievalConfig.query_batch_size", "query_batch_size"},
	{"RetrievalConfig.gallery_batch_size", "gallery_batch_size"},
	{"RetrievalConfig.max_pairwise_comparisons", "max_pairwise_comparisons"},
	{"RetrievalConfig.worst_queries", "worst_queries"},
	{"RetrievalConfig.gain", "gain"},
	{"RetrievalConfig.precision", "precision"},
	{"MemoryConfig.max_memory_bytes", "max_memory_bytes"},
	{"MemoryConfig.spill_dir", "spill_dir"},
}

// decodeStrict decodes a JSON request over the defaults already in v;
// unknown keys and trailing data are usage errors naming what was wrong.
func decodeStrict(what string, data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil // every option at its default
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return usagef("%s: option %s must be %s, got a JSON %s", what, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return usagef("%s: %v", what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return usagef("%s: trailing data after the request object", what)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "a number"
}
