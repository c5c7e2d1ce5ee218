package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// mdEscaper applies the SPEC §5.5 rules in one pass. Because every rule
// maps an input character (never text produced by an earlier rule), a
// single-pass replacer is equivalent to applying them in the given order;
// "\r\n" is listed first so it wins over the lone "\r".
var mdEscaper = strings.NewReplacer(
	"\r\n", "<br>",
	"\r", "<br>",
	"\n", "<br>",
	`\`, `\\`,
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	"|", `\|`,
)

// EscapeMarkdown escapes a dynamic value for the Markdown report so it can
// neither break a table row nor start a new line or HTML tag.
func EscapeMarkdown(s string) string { return mdEscaper.Replace(s) }

// Markdown renders the report of SPEC §5.5. It holds no timings, so equal
// inputs give byte-identical output.
func Markdown(b *results.Benchmark) ([]byte, error) {
	entries, err := summaryEntries(b.DatasetSummary)
	if err != nil {
		return nil, err
	}
	return MarkdownWithSummary(b, entries)
}

// SummaryEntry is one "- key: value" bullet of the dataset summary.
type SummaryEntry struct{ Key, Value string }

// MarkdownWithSummary renders b with the given dataset summary bullets in
// place of b.DatasetSummary's: an artifact-backed reconstruction carries the
// shorter summary of SPEC §10.8.
func MarkdownWithSummary(b *results.Benchmark, summary []SummaryEntry) ([]byte, error) {
	ranked := b.Ranked()
	for _, r := range ranked {
		if r.Forward == nil {
			return nil, fmt.Errorf("markdown report: result %s has no forward score result", msgfmt.Quote(r.Name))
		}
	}
	var buf bytes.Buffer
	buf.WriteString("# vertebrae retrieval report\n\n## Dataset summary\n\n")
	for _, e := range summary {
		fmt.Fprintf(&buf, "- %s: %s\n", EscapeMarkdown(e.Key), EscapeMarkdown(e.Value))
	}
	buf.WriteString("\n## Ranking\n\n")
	if err := writeRanking(&buf, b, ranked); err != nil {
		return nil, err
	}
	if b.Comparison != nil && len(b.Comparison.Blocks) > 0 {
		buf.WriteString("\n## Comparison\n\n")
		if err := writeComparison(&buf, b.Comparison, ranked); err != nil {
			return nil, err
		}
	}
	if hasCompression(ranked) {
		buf.WriteString("\n## Compression\n\n")
		if err := writeCompression(&buf, ranked); err != nil {
			return nil, err
		}
	}
	buf.WriteString("\n## Details\n")
	for i, r := range ranked {
		if err := writeDetails(&buf, i+1, r); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func summaryEntries(s retrieval.Summary) ([]SummaryEntry, error) {
	identity, err := canonjson.Marshal(s.Identity)
	if err != nil {
		return nil, fmt.Errorf("markdown report: dataset identity: %w", err)
	}
	metadata, err := canonjson.Marshal(s.Metadata)
	if err != nil {
		return nil, fmt.Errorf("markdown report: dataset metadata: %w", err)
	}
	return []SummaryEntry{ // SPEC §2.11 order
		{"modality", s.Modality},
		{"query_modality", s.QueryModality},
		{"gallery_modality", s.GalleryModality},
		{"n_queries", strconv.Itoa(s.NQueries)},
		{"n_gallery", strconv.Itoa(s.NGallery)},
		{"n_relevance_pairs", strconv.Itoa(s.NRelevancePairs)},
		{"n_exclusions", strconv.Itoa(s.NExclusions)},
		{"identity", string(identity)},
		{"metadata", string(metadata)},
	}, nil
}

func writeRanking(buf *bytes.Buffer, b *results.Benchmark, ranked []*results.ExtractorResult) error {
	primary := b.Metadata.RetrievalConfig.PrimaryMetric
	if len(ranked) > 0 {
		primary = ranked[0].Forward.PrimaryMetric
	}
	block := primaryBlock(b, primary)
	keys := rankingKeys(ranked)
	if block != nil { // SPEC §13: key letters, intervals and superscripts
		fmt.Fprintf(buf, "| key | rank | extractor | primary score | %s | 95 %% CI | mrr | map |\n", EscapeMarkdown(primary))
		buf.WriteString("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n")
	} else {
		fmt.Fprintf(buf, "| rank | extractor | primary score | %s | mrr | map |\n", EscapeMarkdown(primary))
		buf.WriteString("| ---: | --- | ---: | ---: | ---: | ---: |\n")
	}
	for i, r := range ranked {
		cells := []string{strconv.Itoa(i + 1), EscapeMarkdown(r.Name)}
		if block != nil {
			cells = append([]string{keys[r.Name]}, cells...)
		}
		score, err := fixed4(r.PrimaryScore, r.Name, "primary_score")
		if err != nil {
			return err
		}
		cells = append(cells, score)
		for _, key := range []string{primary, "mrr", "map"} {
			v, ok := r.Forward.Metrics.Get(key)
			if !ok {
				return fmt.Errorf("markdown report: result %s has no forward metric %s", msgfmt.Quote(r.Name), msgfmt.Quote(key))
			}
			s, err := fixed4(v, r.Name, key)
			if err != nil {
				return err
			}
			if block != nil && key == primary {
				var ci string
				if s, ci, err = comparedCells(block, keys, r.Name, s); err != nil {
					return err
				}
				cells = append(cells, s, ci)
				continue
			}
			cells = append(cells, s)
		}
		fmt.Fprintf(buf, "| %s |\n", strings.Join(cells, " | "))
	}
	if block != nil {
		writeRankingLegend(buf, b.Comparison, primary)
	}
	return nil
}

func writeDetails(buf *bytes.Buffer, rank int, r *results.ExtractorResult) error {
	fmt.Fprintf(buf, "\n### %d. %s\n\n", rank, EscapeMarkdown(r.Name))
	fwd, err := metricList(r.Forward.Metrics.Values, r.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(buf, "- Forward metrics: %s\n", fwd)
	if err := writeMargins(buf, "Forward", r.Forward, r.Name); err != nil {
		return err
	}
	if r.Reverse != nil {
		rev, err := metricList(r.Reverse.Metrics.Values, r.Name)
		if err != nil {
			return err
		}
		fmt.Fprintf(buf, "- Reverse metrics: %s\n", rev)
		if err := writeMargins(buf, "Reverse", r.Reverse, r.Name); err != nil {
			return err
		}
	}
	// Metadata read back from JSON holds plain strings and bools too, so
	// type assertions cover both freshly built and reconstructed results.
	if method, ok := r.CompressionMetadata["method"].(string); ok && method != "" && method != "none" {
		applied, _ := r.CompressionMetadata["applied"].(bool)
		fmt.Fprintf(buf, "- Compression: %s, applied=%t\n", EscapeMarkdown(method), applied)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(buf, "- Warning: %s\n", EscapeMarkdown(w))
	}
	return nil
}

// writeMargins renders the similarity diagnostics of SPEC §4.7 (means and
// medians of the best positive, the nearest negative and their margin),
// omitted when they are unavailable (evaluate-run has none).
func writeMargins(buf *bytes.Buffer, dir string, s *results.ScoreResult, name string) error {
	d := s.Diagnostics
	var parts []string
	for _, x := range []struct {
		label string
		sum   metrics.Summary
	}{{"positive similarity", d.PositiveSimilarity}, {"nearest negative", d.NearestNegativeSimilarity}, {"margin", d.RetrievalMargin}} {
		if x.sum.Mean == nil || x.sum.Median == nil {
			continue
		}
		mean, err := fixed4(*x.sum.Mean, name, x.label)
		if err != nil {
			return err
		}
		median, err := fixed4(*x.sum.Median, name, x.label)
		if err != nil {
			return err
		}
		parts = append(parts, fmt.Sprintf("%s mean=%s median=%s", x.label, mean, median))
	}
	if len(parts) > 0 {
		fmt.Fprintf(buf, "- %s similarity: %s\n", dir, strings.Join(parts, "; "))
	}
	return nil
}

// metricList renders "mrr=0.5000, map=…" in the values' (canonical) order.
func metricList(v metrics.Values, name string) (string, error) {
	if len(v.Keys) != len(v.Vals) {
		return "", errors.New("markdown report: metric keys and values differ in length")
	}
	parts := make([]string, len(v.Keys))
	for i, k := range v.Keys {
		s, err := fixed4(v.Vals[i], name, k)
		if err != nil {
			return "", err
		}
		parts[i] = EscapeMarkdown(k) + "=" + s
	}
	return strings.Join(parts, ", "), nil
}

// fixed4 formats a reported number with 4 decimals, refusing non-finite
// values, which SPEC §5.4 treats as a bug that fails the write. A non-zero
// value below 0.001 keeps 3 significant digits instead (4.2e-05, not
// 0.0000), so small recalls and margins stay visible.
func fixed4(f float64, name, what string) (string, error) {
	if !finite(f) {
		return "", fmt.Errorf("markdown report: result %s: non-finite %s %v", msgfmt.Quote(name), what, f)
	}
	if f != 0 && math.Abs(f) < 0.001 {
		return strconv.FormatFloat(f, 'g', 3, 64), nil
	}
	return strconv.FormatFloat(f, 'f', 4, 64), nil
}

// hasCompression reports whether any result is a compression variant (then
// the report shows quality against gallery bytes).
func hasCompression(ranked []*results.ExtractorResult) bool {
	for _, r := range ranked {
		if m, _ := r.CompressionMetadata["method"].(string); m != "" && m != "none" {
			return true
		}
	}
	return false
}

// writeCompression renders the quality-versus-bytes table: every ranked
// result with its compressed width, gallery bytes and compression ratio.
// Gallery bytes are compress.GalleryBytes, the numbers of the compression
// frontier: the bytes as stored by the method, and for uncompressed and
// skipped variants the float32 baseline rows × width × 4 (ratio 1.00),
// whatever the source dtype; "-" when there is no byte count (an
// uncompressed sparse gallery).
func writeCompression(buf *bytes.Buffer, ranked []*results.ExtractorResult) error {
	buf.WriteString("| extractor | method | applied | dim | gallery bytes | ratio | primary score |\n")
	buf.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, r := range ranked {
		md := r.CompressionMetadata
		method, _ := md["method"].(string)
		applied, _ := md["applied"].(bool)
		dim := "-"
		if d, ok := asInt(md["compressed_dim"]); ok {
			dim = strconv.Itoa(d)
		}
		bytesCell, ratio := galleryBytesCells(r)
		score, err := fixed4(r.PrimaryScore, r.Name, "primary_score")
		if err != nil {
			return err
		}
		fmt.Fprintf(buf, "| %s | %s | %t | %s | %s | %s | %s |\n", EscapeMarkdown(r.Name), EscapeMarkdown(method), applied, dim, bytesCell, ratio, score)
	}
	return nil
}

// galleryBytesCells formats a result's gallery bytes and compression ratio
// (compress.GalleryBytes and compress.Ratio), "-" when unknown.
func galleryBytesCells(r *results.ExtractorResult) (bytesCell, ratio string) {
	bytesCell, ratio = "-", "-"
	nGallery := 0
	if r.Forward != nil {
		nGallery = r.Forward.Metadata.NGallery
	}
	if v, ok := compress.GalleryBytes(r.CompressionMetadata, nGallery); ok {
		bytesCell = strconv.Itoa(v)
	}
	if v, ok := compress.Ratio(r.CompressionMetadata, nGallery); ok {
		ratio = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return bytesCell, ratio
}

func asInt(v any) (int, bool) {
	switch t := v.(type) {
	case int:
		return t, true
	case int64:
		return int(t), true
	case float64:
		return int(t), t == float64(int(t))
	}
	return 0, false
}
