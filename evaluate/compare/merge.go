package compare

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/results"
)

// Report is one JSON report to merge, with the name errors give it (a file
// path, or a result name for an in-memory report).
type Report struct {
	Source string
	Data   []byte
}

// MergeReports reads, verifies and merges JSON reports of one dataset and
// protocol into one benchmark, finalized and without a comparison section
// (SPEC §6.6): the results in the order given, compression configurations
// deduplicated. Reports of different datasets or protocols are refused,
// naming the task components that differ.
func MergeReports(reports []Report) (*results.Benchmark, error) {
	var merged *results.Benchmark
	var first string
	for _, r := range reports {
		b, err := results.ReadReport(r.Data)
		if err == nil {
			err = b.Verify()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Source, err)
		}
		if merged == nil {
			merged, first = b, r.Source
			continue
		}
		if err := sameProtocol(first, merged, r.Source, b); err != nil {
			return nil, err
		}
		merged.ExtractorResults = append(merged.ExtractorResults, b.ExtractorResults...)
		for _, c := range b.Metadata.CompressionConfigs {
			if !slices.ContainsFunc(merged.Metadata.CompressionConfigs, func(m map[string]any) bool { return reflect.DeepEqual(m, c) }) {
				merged.Metadata.CompressionConfigs = append(merged.Metadata.CompressionConfigs, c)
			}
		}
	}
	if merged == nil {
		return nil, &OptionError{Msg: "no reports to merge"}
	}
	if err := merged.Finalize(); err != nil {
		return nil, err
	}
	merged.Comparison = nil
	return merged, nil
}

// sameProtocol refuses to merge reports of different datasets or protocols
// (SPEC §6.6): the dataset identity key and the protocol fingerprint must
// be equal.
func sameProtocol(pa string, a *results.Benchmark, pb string, b *results.Benchmark) error {
	ka, _ := a.DatasetSummary.Identity["key"].(string)
	kb, _ := b.DatasetSummary.Identity["key"].(string)
	if ka == "" || kb == "" || ka != kb {
		return fmt.Errorf("reports have different dataset identities: %s%s has %s, %s has %s", taskDifference(pa, a, pb, b), pa, msgfmt.Quote(ka), pb, msgfmt.Quote(kb))
	}
	fa, fb := a.Metadata.ProtocolFingerprint, b.Metadata.ProtocolFingerprint
	if fa == "" || fa != fb {
		return fmt.Errorf("reports have different protocol fingerprints: %s%s has %s, %s has %s", taskDifference(pa, a, pb, b), pa, msgfmt.Quote(fa), pb, msgfmt.Quote(fb))
	}
	return nil
}

// taskComponents are the metadata.task_digests components in the order a
// refusal names them, with what a difference means.
var taskComponents = []struct{ key, name, meaning string }{
	{"query_ids", "query IDs", "different query ID files (or row counts)"},
	{"gallery_ids", "gallery IDs", "different gallery ID files (or row counts)"},
	{"relevance", "relevance", "different qrels or labels"},
	{"exclusions", "exclusions", "different exclusion files"},
	{"retrieval_config", "retrieval config", "different retrieval settings (similarity, ks, gain, precision, …)"},
}

// taskDifference names the task components whose digests differ, as
// "reports differ in their relevance: a.json and b.json were evaluated on
// different qrels or labels; ", or "" when the reports carry no digests
// (written by an older version) or none differs.
func taskDifference(pa string, a *results.Benchmark, pb string, b *results.Benchmark) string {
	da, db := a.Metadata.TaskDigests, b.Metadata.TaskDigests
	if len(da) == 0 || len(db) == 0 {
		return ""
	}
	var names, meanings []string
	for _, c := range taskComponents {
		if da[c.key] != db[c.key] {
			names = append(names, c.name)
			meanings = append(meanings, c.meaning)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("reports differ in their %s: %s and %s were evaluated on %s; ", strings.Join(names, ", "), pa, pb, strings.Join(meanings, "; "))
}
