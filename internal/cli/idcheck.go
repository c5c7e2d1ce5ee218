package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/idlist"
	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// checkIDFile applies the SPEC §2.2 ID rules to the IDs read from path
// (an ID file, or "file column C"), so the message names the file.
func checkIDFile(side, path string, ids []string) error {
	return idlist.Check(side, path, ids, true)
}

// checkWidth names the file of a zero-width embedding matrix.
func checkWidth(path, side string, m matrix.Matrix) error {
	if m.Cols() == 0 {
		return formats.Errorf(path, "%s embeddings must be a 2D array with at least one column; got shape (%d, 0)", side, m.Rows())
	}
	return nil
}

// unknownIDHint adds a hint to an "unknown query or gallery ID" error when
// the unknown ID and a known one differ only by surrounding white space (a
// trailing space in an ID file or qrels is invisible, and IDs are compared
// byte for byte, SPEC §2.2).
func unknownIDHint(err error, qrelsPath, qrelsFormat string, qids, gids []string) error {
	var inv *retrieval.InvalidError
	if err == nil || qrelsPath == "" || !errors.As(err, &inv) || !strings.Contains(err.Error(), "unknown query or gallery ID") {
		return err
	}
	f, ferr := qrels.FormatFromPath(qrelsPath)
	if qrelsFormat != "" {
		f, ferr = qrels.ParseFormat(qrelsFormat)
	}
	if ferr != nil || !f.IsText() {
		return err
	}
	recs, rerr := qrels.ReadRecords(qrelsPath, f)
	if rerr != nil {
		return err
	}
	for _, side := range []struct {
		name string
		ids  []string
		get  func(qrels.Record) string
	}{{"query", qids, func(r qrels.Record) string { return r.QueryID }}, {"gallery", gids, func(r qrels.Record) string { return r.GalleryID }}} {
		known := make(map[string]bool, len(side.ids))
		trimmed := make(map[string]string, len(side.ids))
		for _, id := range side.ids {
			known[id] = true
			trimmed[strings.TrimSpace(id)] = id
		}
		for _, r := range recs {
			id := side.get(r)
			if known[id] {
				continue
			}
			if k, ok := trimmed[strings.TrimSpace(id)]; ok {
				return fmt.Errorf("%w\nhint: %s ID %s (%s:%d) and the known ID %s differ only by surrounding white space; IDs are compared byte for byte",
					err, side.name, msgfmt.Quote(id), qrelsPath, r.Line, msgfmt.Quote(k))
			}
		}
	}
	return err
}
