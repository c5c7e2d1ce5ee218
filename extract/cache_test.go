package extract

import "testing"

// SPEC §9.5: cache: false (or no store) is disabled before anything else;
// an explicit non-blank cache_identity or a content identity (cache_safe)
// is eligible; anything else is bypassed.
func TestCacheEligibility(t *testing.T) {
	for _, c := range []struct {
		name     string
		recipe   map[string]any
		enabled  bool
		eligible bool
		status   string
	}{
		{"disabled wins", map[string]any{"cache_safe": true}, false, false, CacheDisabled},
		{"identity", map[string]any{"cache_identity": "e5@v2", "cache_safe": false}, true, true, CacheMiss},
		{"blank identity", map[string]any{"cache_identity": "  ", "cache_safe": false}, true, false, CacheBypassed},
		{"content identity", map[string]any{"cache_identity": nil, "cache_safe": true}, true, true, CacheMiss},
		{"no identity", map[string]any{"name": "x"}, true, false, CacheBypassed},
		{"non-bool cache_safe", map[string]any{"cache_safe": "true"}, true, false, CacheBypassed},
	} {
		eligible, status := CacheEligibility(c.recipe, c.enabled)
		if eligible != c.eligible || status != c.status {
			t.Errorf("%s: (%v, %s), want (%v, %s)", c.name, eligible, status, c.eligible, c.status)
		}
	}
}
