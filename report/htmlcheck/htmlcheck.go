package htmlcheck

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Thresholds of CheckReadable.
const (
	// MinNamePx is the narrowest a name cell (td.name) may be: about eight
	// characters, where a squeezed column is one character wide.
	MinNamePx = 100
	// MinFigureTextPx is the smallest rendered size of figure text, the
	// size the report scales figures down to at most (report's
	// minFigureTextPx, less rounding).
	MinFigureTextPx = 8.9
)

// Chromium returns the path of a Chromium binary. Without one the test
// skips, except in CI (CI=true or VERTEBRAE_REQUIRE_CHROMIUM=1), where it
// fails.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("VERTEBRAE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is required in CI (.ci/run installs the Debian package) but was not found")
	}
	t.Skip("chromium not installed; the HTML layout check needs it")
	return ""
}

// Measured is a rendered size in CSS pixels and what it belongs to.
type Measured struct {
	Px   float64 `json:"px"`
	What string  `json:"what"`
}

// Layout is what the page looks like at one viewport width.
type Layout struct {
	InnerWidth  float64 `json:"innerWidth"`  // the viewport's width
	ScrollWidth float64 `json:"scrollWidth"` // the page's width: wider than the viewport means sideways scrolling
	// Overflowing names elements outside any sideways-scrolling box whose
	// right edge passes the viewport or whose content spills out of them
	// (what makes the page too wide).
	Overflowing []string `json:"overflowing"`
	// Names are the widths of the name cells, FigureText the rendered
	// font sizes of every text of the inline figures.
	Names      []Measured `json:"names"`
	FigureText []Measured `json:"figureText"`
	Figures    int        `json:"figures"`
}

// measureScript runs in a wrapper page around an iframe holding the
// report (the report itself runs no script), once everything has loaded.
const measureScript = `
window.addEventListener('load', function () {
  var f = document.getElementById('page'), d = f.contentDocument, w = f.contentWindow;
  var out = {innerWidth: w.innerWidth, scrollWidth: d.documentElement.scrollWidth,
    overflowing: [], names: [], figureText: [], figures: d.querySelectorAll('figure svg').length};
  function scrolls(e) {
    for (var p = e.parentElement; p; p = p.parentElement) {
      var o = w.getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  }
  function describe(e) {
    return e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined ? '.' + e.className : '') +
      ' "' + (e.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 40) + '"';
  }
  d.querySelectorAll('body *').forEach(function (e) {
    if (scrolls(e)) return;
    var spills = w.getComputedStyle(e).overflowX === 'visible' && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1;
    if (e.getBoundingClientRect().right > w.innerWidth + 0.5 || spills) out.overflowing.push(describe(e));
  });
  d.querySelectorAll('td.name').forEach(function (e) {
    out.names.push({px: e.getBoundingClientRect().width, what: e.textContent});
  });
  d.querySelectorAll('figure svg text').forEach(function (t) {
    var m = t.getScreenCTM();
    var size = parseFloat(w.getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    var fig = t.closest('figure');
    out.figureText.push({px: size, what: (fig ? fig.id + ': ' : '') + t.textContent});
  });
  var p = document.createElement('pre');
  p.id = 'vertebrae-layout';
  p.textContent = JSON.stringify(out);
  document.body.appendChild(p);
});
`

var layoutOut = regexp.MustCompile(`(?s)<pre id="vertebrae-layout">(.*?)</pre>`)

// Measure lays page out in Chromium (bin) in a viewport width CSS pixels
// wide and returns its layout.
func Measure(t testing.TB, bin string, page []byte, width int) Layout {
	t.Helper()
	dir := t.TempDir()
	wrapper := `<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0;display:block}</style></head><body>` +
		`<iframe id="page" width="` + strconv.Itoa(width) + `" height="900" srcdoc="` + html.EscapeString(string(page)) + `"></iframe>` +
		`<script>` + measureScript + `</script></body></html>`
	path := filepath.Join(dir, "wrapper.html")
	if err := os.WriteFile(path, []byte(wrapper), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size="+strconv.Itoa(width+40)+",1000",
		"--virtual-time-budget=10000", "--dump-dom", "file://"+path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	m := layoutOut.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("chromium printed no layout at %d px:\n%.2000s\n%s", width, stdout.String(), stderr.String())
	}
	var l Layout
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &l); err != nil {
		t.Fatalf("layout at %d px: %v", width, err)
	}
	return l
}

// CheckReadable lays page out at each width and fails when the page
// scrolls sideways, a name cell is narrower than MinNamePx or a figure's
// text renders below MinFigureTextPx. It returns the layouts.
func CheckReadable(t testing.TB, page []byte, widths ...int) []Layout {
	t.Helper()
	bin := Chromium(t)
	var out []Layout
	for _, w := range widths {
		l := Measure(t, bin, page, w)
		out = append(out, l)
		if l.InnerWidth != float64(w) {
			t.Errorf("%d px: the viewport is %v px wide", w, l.InnerWidth)
		}
		if l.ScrollWidth > l.InnerWidth {
			t.Errorf("%d px: the page is %v px wide and scrolls sideways; too wide: %s", w, l.ScrollWidth, first(l.Overflowing, 8))
		}
		narrow := 0
		for _, n := range l.Names {
			if n.Px < MinNamePx {
				if narrow < 5 {
					t.Errorf("%d px: name cell %q is %.0f px wide, want at least %d", w, n.What, n.Px, MinNamePx)
				}
				narrow++
			}
		}
		if narrow > 5 {
			t.Errorf("%d px: %d more name cells too narrow", w, narrow-5)
		}
		if l.Figures > 0 && len(l.FigureText) == 0 {
			t.Errorf("%d px: %d figures without text", w, l.Figures)
		}
		small := 0
		for _, f := range l.FigureText {
			if f.Px < MinFigureTextPx {
				if small < 5 {
					t.Errorf("%d px: figure text %q renders at %.1f px, want at least %v", w, f.What, f.Px, MinFigureTextPx)
				}
				small++
			}
		}
		if small > 5 {
			t.Errorf("%d px: %d more figure texts too small", w, small-5)
		}
	}
	return out
}

func first(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], "; ") + "; …"
	}
	return strings.Join(s, "; ")
}
