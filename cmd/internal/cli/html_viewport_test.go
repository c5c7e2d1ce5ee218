package cli

import (
	"path/filepath"
	"testing"

	"github.com/vertebrae-eval/vertebrae/report/htmlcheck"
)

// The demo's HTML page is readable in a real browser from a 360 px phone
// to a 1920 px screen (SPEC §5.8): the page never scrolls sideways (wide
// tables and figures scroll in their own boxes), name columns keep a
// usable width and figure text stays legible.
func TestDemoHTMLReadableWidths(t *testing.T) {
	if testing.Short() {
		t.Skip("demo scores 3 backbones × 1,000 × 5,000 pairs and starts Chromium; skipped with -short")
	}
	htmlPath := filepath.Join(t.TempDir(), "demo.html")
	if code, _, stderr := run(t, "demo", "--quiet", "--html", htmlPath); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	layouts := htmlcheck.CheckReadable(t, []byte(mustRead(t, htmlPath)), 360, 1920)
	for _, l := range layouts {
		// Ranking, pair list, compression table and their name cells;
		// every figure's text measured.
		if len(l.Names) < 4+2*6+4 || l.Figures != 5 || len(l.FigureText) < 5*10 {
			t.Errorf("%v px: %d name cells, %d figures, %d figure texts", l.InnerWidth, len(l.Names), l.Figures, len(l.FigureText))
		}
	}
}
