package results

import (
	"fmt"
	"math"
)

// Verify checks that a report read from disk holds numbers a run can
// produce before anything is computed from it (`compare` merges reports
// it did not write): every metric is finite and in [0, 1], counts are not
// negative, the score is the primary metric, and each metric is the mean
// of its per-query values when the report carries them.
func (b *Benchmark) Verify() error {
	for i, r := range b.ExtractorResults {
		name := fmt.Sprintf("extractor_results[%d] (%q)", i, r.Name)
		for _, d := range []struct {
			dir string
			s   *ScoreResult
		}{{"forward", r.Forward}, {"reverse", r.Reverse}} {
			if d.s == nil {
				continue
			}
			if err := d.s.verify(); err != nil {
				return fmt.Errorf("%s %s: %w", name, d.dir, err)
			}
		}
		if r.Forward != nil {
			want := r.Forward.Score
			if r.Reverse != nil {
				want = (r.Forward.Score + r.Reverse.Score) / 2
			}
			if !nearlyEqual(r.PrimaryScore, want) {
				return fmt.Errorf("%s: primary_score %v is not its score %v", name, r.PrimaryScore, want)
			}
		}
	}
	return nil
}

func (s *ScoreResult) verify() error {
	m := s.Metadata
	if m.NQueries < 0 || m.NGallery < 0 || s.Diagnostics.EligibleQueries < 0 {
		return fmt.Errorf("negative count (n_queries %d, n_gallery %d, eligible_queries %d)", m.NQueries, m.NGallery, s.Diagnostics.EligibleQueries)
	}
	for i, k := range s.Metrics.Keys {
		if v := s.Metrics.Vals[i]; !(v >= 0 && v <= 1) {
			return fmt.Errorf("metric %s = %v is impossible (metrics lie in [0, 1])", k, v)
		}
	}
	if p, ok := s.Metrics.Get(s.PrimaryMetric); ok && !nearlyEqual(p, s.Score) {
		return fmt.Errorf("score %v is not its primary metric %s = %v", s.Score, s.PrimaryMetric, p)
	}
	if len(s.PerQuery) == 0 {
		return nil
	}
	for i, k := range s.Metrics.Keys {
		sum := 0.0
		for _, row := range s.PerQuery {
			v, ok := row.Metrics.Get(k)
			if !ok {
				return fmt.Errorf("per_query row of query %q has no %s", row.QueryID, k)
			}
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("per_query %s of query %q = %v is impossible (metrics lie in [0, 1])", k, row.QueryID, v)
			}
			sum += v
		}
		if mean := sum / float64(len(s.PerQuery)); !nearlyEqual(mean, s.Metrics.Vals[i]) {
			return fmt.Errorf("metric %s = %v is not the mean %v of its %d per-query values", k, s.Metrics.Vals[i], mean, len(s.PerQuery))
		}
	}
	return nil
}

// nearlyEqual is equality up to the rounding of a differently ordered sum.
func nearlyEqual(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
