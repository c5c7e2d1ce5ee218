package cli

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/runspec"
)

// The documentation's examples are run by TestDocsCommandBlocks: every
// fenced block of README.md and docs/*.md tagged sh, bash or shell runs
// in bash, in file order, in one temporary directory per file that holds
// generated fixtures (docsFixtures), with `vertebrae` on PATH being this
// test binary (docsCLIEnv). A block preceded by the line
//
//	<!-- docs-test: skip: REASON -->
//
// is not run (the reason is required: network, downloads, long
// benchmarks), and a block preceded by
//
//	<!-- docs-test: file NAME -->
//
// is written to NAME in the directory before the following blocks run
// (the run files the commands use). Shell variables a block assigns at the
// start of a line (K=$(…)) are kept for the file's later blocks, which
// continue its flow.
const docsCLIEnv = "VERTEBRAE_DOCS_TEST_CLI"

func init() {
	// The shim on PATH starts this test binary as the CLI.
	if os.Getenv(docsCLIEnv) == "1" {
		os.Unsetenv(docsCLIEnv)
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
}

type docBlock struct {
	file     string // relative to the repository root
	line     int    // of the opening fence
	lang     string
	body     string
	skip     string // reason, when marked skip
	writesTo string // file name, when marked file
}

var docMarker = regexp.MustCompile(`^<!-- docs-test: (skip: (.+)|file ([^ ]+)) -->$`)

// docFiles lists README.md and docs/*.md, relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join("..", "..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		files = append(files, filepath.ToSlash(filepath.Join("docs", filepath.Base(m))))
	}
	slices.Sort(files[1:])
	return files
}

// docBlocks returns the fenced blocks of one documentation file.
func docBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		indent := len(lines[i]) - len(fence)
		b := docBlock{file: file, line: i + 1, lang: strings.Fields(strings.TrimPrefix(fence, "```") + " x")[0]}
		if b.lang == "x" {
			b.lang = ""
		}
		if i > 0 {
			if m := docMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.skip, b.writesTo = m[2], m[3]
			}
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[i], " "), "```"); i++ {
			l := lines[i]
			if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
				l = l[indent:]
			}
			body = append(body, l)
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: unclosed code block", file, b.line)
		}
		b.body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

func isShell(lang string) bool { return lang == "sh" || lang == "bash" || lang == "shell" }

// TestDocsCommandBlocks runs every command block of the README and docs/.
func TestDocsCommandBlocks(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shimDir := t.TempDir()
	shim := "#!/bin/sh\n" + docsCLIEnv + "=1 exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shimDir, "vertebrae"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	_, jqErr := exec.LookPath("jq")
	var ran atomic.Int64
	t.Run("files", func(t *testing.T) {
		for _, file := range docFiles(t) {
			t.Run(strings.TrimSuffix(file, ".md"), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				docsFixtures(t, dir)
				for _, b := range docBlocks(t, file) {
					where := fmt.Sprintf("%s:%d", b.file, b.line)
					switch {
					case b.writesTo != "":
						writeFile(t, dir, b.writesTo, b.body)
						continue
					case !isShell(b.lang):
						continue
					case b.skip != "":
						t.Logf("%s: not run: %s", where, b.skip)
						continue
					case strings.Contains(b.body, "jq ") && jqErr != nil && os.Getenv("CI") == "":
						t.Logf("%s: not run: jq is not installed", where)
						continue
					}
					script := "if [ -f .docs-test-vars ]; then . ./.docs-test-vars; fi\n" + b.body
					if vars := shellAssignments(b.body); len(vars) > 0 {
						script += "{ declare -p " + strings.Join(vars, " ") + " 2>/dev/null || true; } >> .docs-test-vars\n"
					}
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
					cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), "PATH="+shimDir+string(os.PathListSeparator)+os.Getenv("PATH"),
						"HOME="+dir, "VERTEBRAE_MODELS_DIR=")
					var out bytes.Buffer
					cmd.Stdout, cmd.Stderr = &out, &out
					err := cmd.Run()
					cancel()
					if err != nil {
						t.Errorf("%s: block failed: %v\n--- block\n%s--- output\n%s", where, err, b.body, tail(out.String(), 4000))
						continue
					}
					ran.Add(1)
				}
			})
		}
	})
	if n := ran.Load(); n < 8 && !t.Failed() {
		t.Errorf("only %d command blocks ran", n)
	}
}

var shellAssign = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)=`)

// shellAssignments lists the variables a block assigns at line starts.
func shellAssignments(body string) []string {
	var out []string
	for _, m := range shellAssign.FindAllStringSubmatch(body, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestDocsBlocksAreMarked: skip markers are on command blocks or Python
// blocks (python/tests/test_docs.py runs those; the reason is required by
// docMarker), file markers on YAML or JSON blocks,
// and every complete run file written by a file marker parses.
func TestDocsBlocksAreMarked(t *testing.T) {
	for _, file := range docFiles(t) {
		for _, b := range docBlocks(t, file) {
			where := fmt.Sprintf("%s:%d", b.file, b.line)
			if b.writesTo != "" && b.lang != "yaml" && b.lang != "json" {
				t.Errorf("%s: docs-test file marker on a %q block", where, b.lang)
			}
			if b.skip != "" && !isShell(b.lang) && b.lang != "python" {
				t.Errorf("%s: docs-test skip marker on a %q block (only command and Python blocks run)", where, b.lang)
			}
			if b.writesTo != "" {
				if _, err := runspec.Parse(filepath.Join(t.TempDir(), b.writesTo), []byte(b.body)); err != nil && strings.HasPrefix(b.body, "version:") {
					t.Errorf("%s: run file does not parse: %v", where, err)
				}
			}
		}
	}
}

// TestDocsLinks: relative links between README.md and docs/ name files
// that exist, and #anchors name headings of their target.
func TestDocsLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
			}
			full := filepath.Join("..", "..", "..", filepath.FromSlash(resolved))
			if _, err := os.Stat(full); err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if anchor == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			if !slices.Contains(docAnchors(t, full), anchor) {
				t.Errorf("%s: link %s: no heading with anchor #%s in %s", file, target, anchor, resolved)
			}
		}
		// docs/command-extractor.md is maintained with the extractor.
		if file != "docs/command-extractor.md" && (strings.Contains(string(data), "SPEC §") || strings.Contains(string(data), "SPEC.md")) {
			t.Errorf("%s cites SPEC, which is not in the repository", file)
		}
	}
}

// docAnchors returns GitHub's anchors of a Markdown file's headings.
func docAnchors(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]int{}
	inCode := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127 && !strings.ContainsRune("§—–·…→×", r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}

// TestDocsRunFileKeys: docs/run-file.md names every extractor type and
// every section of a run file.
func TestDocsRunFileKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "run-file.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, k := range append(runspec.ExtractorTypes(), "version", "dataset", "retrieval", "embedding",
		"memory", "compression", "extractors", "outputs", "engine", "store", "ids", "id_column") {
		if !strings.Contains(s, "`"+k+"`") {
			t.Errorf("docs/run-file.md does not name `%s`", k)
		}
	}
}

// docsFixtures writes the files the documentation's commands name: two
// backbones' embeddings of 30 queries and 90 gallery items in 6 topics
// (e5 close to the topics, bge noisier), ID files, qrels in TSV and TREC
// form, the same problem as q.npy/g.npy, and a TREC run to score.
func docsFixtures(t *testing.T, dir string) {
	t.Helper()
	const nq, ng, d, topics = 30, 90, 16, 6
	rng := rand.New(rand.NewPCG(27, 1))
	centre := make([][]float64, topics)
	for i := range centre {
		centre[i] = make([]float64, d)
		for j := range centre[i] {
			centre[i][j] = rng.NormFloat64()
		}
	}
	rows := func(n int, noise float64) [][]float64 {
		m := make([][]float64, n)
		for i := range m {
			m[i] = make([]float64, d)
			for j := range m[i] {
				m[i][j] = math.Round((centre[i%topics][j]+noise*rng.NormFloat64())*1e4) / 1e4
			}
		}
		return m
	}
	e5q, e5g := rows(nq, 0.6), rows(ng, 0.6)
	writeNPY(t, dir, "e5_q.npy", e5q)
	writeNPY(t, dir, "e5_g.npy", e5g)
	writeNPY(t, dir, "q.npy", e5q)
	writeNPY(t, dir, "g.npy", e5g)
	writeNPY(t, dir, "bge_q.npy", rows(nq, 1.5))
	writeNPY(t, dir, "bge_g.npy", rows(ng, 1.5))
	var qids, gids, tsv, trec, runb strings.Builder
	for i := range nq {
		fmt.Fprintf(&qids, "q%d\n", i)
	}
	for j := range ng {
		fmt.Fprintf(&gids, "doc%d\n", j)
	}
	for i := range nq {
		for j := range ng {
			if i%topics == j%topics && (j/topics)%2 == 0 {
				fmt.Fprintf(&tsv, "q%d\tdoc%d\t%d\n", i, j, 1+j%3)
				fmt.Fprintf(&trec, "q%d 0 doc%d %d\n", i, j, 1+j%3)
			}
		}
		for r := range 20 {
			fmt.Fprintf(&runb, "q%d Q0 doc%d %d %.3f bm25\n", i, (i*3+r)%ng, r+1, 20-float64(r)*0.5)
		}
	}
	writeFile(t, dir, "q_ids.txt", qids.String())
	writeFile(t, dir, "g_ids.txt", gids.String())
	writeFile(t, dir, "qrels.tsv", tsv.String())
	writeFile(t, dir, "qrels.txt", trec.String())
	writeFile(t, dir, "bm25.run", runb.String())
}

// The README stays an introduction (the two commands, install, a
// walkthrough, links); the reference lives in docs/.
func TestREADMEIsShort(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n >= 400 {
		t.Errorf("README.md has %d lines; keep it under 400 and move reference material to docs/", n)
	}
}
