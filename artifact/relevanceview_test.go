package artifact

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// viewDatasets are relevance artifacts of every form: graded pairs with
// exclusions, labels with leave-one-out exclusions, and IDs and labels that
// need escaping (quotes, backslashes, control characters, non-ASCII, one
// longer than the scanner's buffer).
func viewDatasets(t *testing.T) map[string]*retrieval.Dataset {
	t.Helper()
	out := map[string]*retrieval.Dataset{
		"pairs":  newScoreFixture(t, "view").ds,
		"labels": newLabelFixture(t).ds,
	}
	r := rand.New(rand.NewPCG(7, 11))
	const nq, ng = 13, 300
	odd := []string{`q"uote`, `back\slash`, "tab\tnew\nline", "ctl\u0001", "émoji 🚀", "\u2028sep", strings.Repeat("long", 20_000)}
	qids, gids := make([]string, nq), make([]string, ng)
	for i := range qids {
		qids[i] = fmt.Sprintf("q%d", i)
	}
	for i := range gids {
		gids[i] = fmt.Sprintf("g%d-%s", i, odd[i%len(odd)][:min(12, len(odd[i%len(odd)]))])
	}
	gids[ng/2] = odd[len(odd)-1]
	rel := make([][]float64, nq)
	var excl []retrieval.Pair
	for q := range rel {
		rel[q] = make([]float64, ng)
		for range 1 + r.IntN(6) {
			rel[q][r.IntN(ng)] = float64(1 + r.IntN(3))
		}
		excl = append(excl, retrieval.Pair{QueryID: qids[q], GalleryID: gids[r.IntN(ng)]})
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.IDsOnly(nq), Gallery: retrieval.IDsOnly(ng),
		QueryIDs: qids, GalleryIDs: gids, Identity: retrieval.Declared("odd \"ids\"", "1"), Exclusions: excl},
		retrieval.DenseRelevance(rel))
	if err != nil {
		t.Fatal(err)
	}
	out["escaped pairs"] = ds
	ql, gl := make([]string, nq), make([]string, ng)
	for i := range ql {
		ql[i] = odd[i%5]
	}
	for i := range gl {
		gl[i] = odd[(i*7)%5]
	}
	lds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.IDsOnly(nq), Gallery: retrieval.IDsOnly(ng),
		QueryIDs: qids, GalleryIDs: gids, Identity: retrieval.FromContent()}, retrieval.LabelRelevance(ql, gl))
	if err != nil {
		t.Fatal(err)
	}
	out["escaped labels"] = lds
	return out
}

// A view streams the document (no fallback to the whole-document reader),
// keeps exactly the held rows' IDs and otherwise equals ReadRelevance:
// positives, classes and their labels, exclusions, query side, fingerprint
// and ids_sha256.
func TestRelevanceViewEqualsFull(t *testing.T) {
	t.Parallel()
	for name, ds := range viewDatasets(t) {
		s := New(mem.New())
		key, _, err := s.WriteRelevance(ctx, ds, "")
		if err != nil {
			t.Fatal(err)
		}
		full, err := s.ReadRelevance(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		ng := full.Doc.NGallery
		wantSum, _ := IDsSHA256(full.Doc.GalleryIDs)
		for _, held := range []struct {
			name string
			f    func(int) bool
		}{
			{"all", nil},
			{"none", func(int) bool { return false }},
			{"contiguous 1 of 3", func(g int) bool { return rank.Shard{Index: 1, Total: 3}.Holds(ng, g) }},
			{"modulo 2 of 3", func(g int) bool { return rank.Shard{Index: 2, Total: 3, Layout: rank.Modulo}.Holds(ng, g) }},
			{"last row", func(g int) bool { return g == ng-1 }},
		} {
			for _, mode := range []struct {
				name    string
				trusted bool
				keepIDs bool
			}{{"verified", false, true}, {"trusted", true, true}, {"trusted without IDs", true, false}} {
				t.Run(name+"/"+held.name+"/"+mode.name, func(t *testing.T) {
					v, err := s.streamRelevance(ctx, key, viewOptions{held: held.f, keepIDs: mode.keepIDs, trusted: mode.trusted})
					if err != nil {
						t.Fatalf("the document did not stream: %v", err)
					}
					// A trusted view (a gallery shard's) hashes no gallery ID:
					// finalize checks the fingerprint and ids_sha256.
					if sum := map[bool]string{false: wantSum, true: ""}[mode.trusted]; !v.view || v.trusted != mode.trusted || v.galleryIDsSHA256 != sum {
						t.Fatalf("view %v, trusted %v, ids_sha256 %q, want %q", v.view, v.trusted, v.galleryIDsSHA256, sum)
					}
					if !mode.keepIDs {
						if v.Doc.GalleryIDs != nil || v.Doc.NGallery != ng {
							t.Fatalf("a view keeping no ID has %d ID slots and n_gallery %d (%d rows)", len(v.Doc.GalleryIDs), v.Doc.NGallery, ng)
						}
						v.Doc.GalleryIDs = make([]string, ng) // the comparisons below
					}
					if len(v.Doc.GalleryIDs) != ng {
						t.Fatalf("%d gallery ID slots for %d rows", len(v.Doc.GalleryIDs), ng)
					}
					for g, id := range v.Doc.GalleryIDs {
						want := ""
						if mode.keepIDs && (held.f == nil || held.f(g)) {
							want = full.Doc.GalleryIDs[g]
						}
						if id != want {
							t.Fatalf("gallery row %d: ID %q, want %q", g, id, want)
						}
					}
					if !reflect.DeepEqual(v.Positives, full.Positives) || !reflect.DeepEqual(v.Exclusions, full.Exclusions) ||
						!reflect.DeepEqual(v.Doc.QueryIDs, full.Doc.QueryIDs) || !reflect.DeepEqual(v.Doc.Exclusions, full.Doc.Exclusions) ||
						!reflect.DeepEqual(v.Doc.Relevance, full.Doc.Relevance) || !reflect.DeepEqual(v.Doc.DatasetIdentity, full.Doc.DatasetIdentity) ||
						v.Doc.ProtocolFingerprint != full.Doc.ProtocolFingerprint || v.Doc.DatasetIdentityKey != full.Doc.DatasetIdentityKey ||
						v.Doc.QueryModality != full.Doc.QueryModality || v.Doc.GalleryModality != full.Doc.GalleryModality {
						t.Fatalf("view differs from the whole document:\n%s\n%s", mustJSON(v.Doc), mustJSON(full.Doc))
					}
					if (v.Classes == nil) != (full.Classes == nil) {
						t.Fatalf("classes %v, whole document %v", v.Classes != nil, full.Classes != nil)
					}
					if c := full.Classes; c != nil {
						vc := v.Classes
						if !reflect.DeepEqual(vc.Query, c.Query) || !reflect.DeepEqual(vc.Gallery, c.Gallery) ||
							!reflect.DeepEqual(vc.GalleryLabels(), c.GalleryLabels()) || !reflect.DeepEqual(v.Doc.RelevanceLabels.Query, full.Doc.RelevanceLabels.Query) ||
							v.Doc.RelevanceLabels.Gallery != nil {
							t.Fatal("classes or labels differ from the whole document's")
						}
						for q := range c.Query {
							if !reflect.DeepEqual(vc.Positives(q), c.Positives(q)) {
								t.Fatalf("query %d: positives differ", q)
							}
						}
					}
				})
			}
		}
	}
}

// A document the view cannot stream, or one that fails a check, is read
// whole: the error is ReadRelevance's, byte for byte.
func TestRelevanceViewErrorsAreReadRelevances(t *testing.T) {
	t.Parallel()
	f := newLabelFixture(t)
	pf := newScoreFixture(t, "view-errors")
	s := f.s
	edit := func(src *Store, srcKey, name string, change func(doc map[string]any)) string {
		var doc map[string]any
		if _, err := src.ReadJSON(ctx, srcKey, &doc); err != nil {
			t.Fatal(err)
		}
		change(doc)
		key := "rel/" + name
		if err := s.WriteJSON(ctx, key, doc); err != nil {
			t.Fatal(err)
		}
		return key
	}
	labels := func(doc map[string]any, side string) []any {
		return doc["relevance_labels"].(map[string]any)[side].([]any)
	}
	keys := []string{
		edit(f.s, f.rk, "label-query", func(doc map[string]any) { labels(doc, "query")[4] = "a" }),
		edit(f.s, f.rk, "label-gallery", func(doc map[string]any) { labels(doc, "gallery")[4] = "a" }),
		edit(f.s, f.rk, "both", func(doc map[string]any) { doc["relevance"] = map[string]any{"0": map[string]any{"1": 1}} }),
		edit(f.s, f.rk, "neither", func(doc map[string]any) { delete(doc, "relevance_labels") }),
		edit(f.s, f.rk, "short", func(doc map[string]any) {
			doc["relevance_labels"].(map[string]any)["gallery"] = labels(doc, "gallery")[:6]
		}),
		edit(f.s, f.rk, "no-gallery-labels", func(doc map[string]any) { delete(doc["relevance_labels"].(map[string]any), "gallery") }),
		edit(f.s, f.rk, "empty-label", func(doc map[string]any) { labels(doc, "query")[0] = "" }),
		edit(f.s, f.rk, "id-changed", func(doc map[string]any) { doc["gallery_ids"].([]any)[2] = "other" }),
		edit(f.s, f.rk, "no-ids", func(doc map[string]any) { delete(doc, "gallery_ids") }),
		edit(f.s, f.rk, "n-gallery", func(doc map[string]any) { doc["n_gallery"] = 6 }),
		edit(f.s, f.rk, "type", func(doc map[string]any) { doc["artifact_type"] = TypeExclusions }),
		edit(f.s, f.rk, "exclusion-range", func(doc map[string]any) { doc["exclusions"] = []any{[]any{0, 99}} }),
		edit(pf.s, pf.rk, "grade", func(doc map[string]any) { doc["relevance"].(map[string]any)["0"].(map[string]any)["0"] = -1 }),
		edit(pf.s, pf.rk, "index", func(doc map[string]any) { doc["relevance"].(map[string]any)["0"].(map[string]any)["9"] = 1 }),
		edit(pf.s, pf.rk, "grade-changed", func(doc map[string]any) { doc["relevance"].(map[string]any)["0"].(map[string]any)["0"] = 2 }),
	}
	for _, key := range keys {
		_, want := s.ReadRelevance(ctx, key)
		if want == nil {
			t.Fatalf("%s: ReadRelevance accepted it", key)
		}
		for _, held := range []func(int) bool{nil, func(g int) bool { return g == 1 }} {
			_, got := s.ReadRelevanceView(ctx, key, held)
			if got == nil || got.Error() != want.Error() || errors.Is(got, ErrCheck) != errors.Is(want, ErrCheck) {
				t.Errorf("%s: view error %v, ReadRelevance %v", key, got, want)
			}
		}
	}
	if _, err := s.ReadRelevanceView(ctx, "rel/missing", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
}

// Keys out of canonical order (a document no writer of this package
// produces) are not streamed; the whole-document reader takes them.
func TestRelevanceViewUnorderedDocument(t *testing.T) {
	t.Parallel()
	f := newScoreFixture(t, "unordered")
	raw, _, err := f.s.ReadMetadata(ctx, f.rk)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	b.WriteString(`"gallery_ids": ` + string(doc["gallery_ids"]))
	for k, v := range doc {
		if k != "gallery_ids" {
			b.WriteString(",\n  " + mustJSON(k) + " : " + string(v))
		}
	}
	b.WriteString("}")
	if _, err := decodeRelevanceView(ctx, "k", bytes.NewReader(b.Bytes()), viewOptions{keepIDs: true}); !errors.Is(err, errStream) {
		t.Fatalf("gallery IDs before the dataset key: %v", err)
	}
	// The same document with the dataset key first streams and equals the
	// whole-document read.
	b.Reset()
	b.WriteString(` { "dataset_identity_key" : ` + string(doc["dataset_identity_key"]) + ` , "gallery_ids":` + string(doc["gallery_ids"]))
	for k, v := range doc {
		if k != "gallery_ids" && k != "dataset_identity_key" {
			b.WriteString(",\r\n\t" + mustJSON(k) + ":" + string(v))
		}
	}
	b.WriteString(" } ")
	v, err := decodeRelevanceView(ctx, "k", bytes.NewReader(b.Bytes()), viewOptions{keepIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	full, err := f.s.ReadRelevance(ctx, f.rk)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v.Positives, full.Positives) || !reflect.DeepEqual(v.Doc.GalleryIDs, full.Doc.GalleryIDs) {
		t.Fatal("reordered document read differently")
	}
}

// A gallery shard's score job reads the relevance as a trusted view: of
// its rows' IDs when bidirectional, of none (looked up by row) otherwise;
// a whole-gallery job reads the whole document.
func TestShardJobReadsRelevanceView(t *testing.T) {
	t.Parallel()
	f := newScoreFixture(t, "shard-view")
	cfg := retrieval.DefaultConfig()
	cfg.Bidirectional = true
	req := f.request(cfg)
	shard := rank.Shard{Index: 1, Total: 2}
	j, err := f.s.prepareJob(ctx, req, shardRelevance(cfg, shard))
	if err != nil {
		t.Fatal(err)
	}
	if !j.prot.view || !j.prot.trusted || strings.Join(j.prot.Doc.GalleryIDs, ",") != ",,gc,gd" {
		t.Fatalf("view %v, trusted %v, gallery IDs %q", j.prot.view, j.prot.trusted, j.prot.Doc.GalleryIDs)
	}
	one, err := f.s.prepareJob(ctx, f.request(retrieval.DefaultConfig()), shardRelevance(retrieval.DefaultConfig(), shard))
	if err != nil {
		t.Fatal(err)
	}
	if p := one.Problem(); !one.prot.view || p.GalleryIDs != nil || p.GalleryName == nil || p.GalleryName(1) != "gb" || p.GalleryName(3) != "gd" {
		t.Fatalf("one direction: view %v, gallery IDs %q, name lookup set %v", one.prot.view, p.GalleryIDs, p.GalleryName != nil)
	}
	req = f.request(retrieval.DefaultConfig())
	whole, err := f.s.PrepareScore(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if whole.prot.view || whole.pf != one.pf || whole.ef != one.ef || whole.key != one.key {
		t.Fatalf("whole job: view %v, fingerprints %s/%s vs %s/%s", whole.prot.view, whole.pf, whole.ef, one.pf, one.ef)
	}
}

// FuzzRelevanceView: whatever the streaming reader accepts, the
// whole-document reader accepts too, with the same protocol.
func FuzzRelevanceView(f *testing.F) {
	seeds := []retrieval.Relevance{
		retrieval.DenseRelevance([][]float64{{3, 1, 0}, {0, 0, 2}}),
		retrieval.LabelRelevance([]string{"a", "b"}, []string{"b", "a\"b", "a"}),
	}
	for _, rel := range seeds {
		ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.IDsOnly(2), Gallery: retrieval.IDsOnly(3),
			QueryIDs: []string{"q0", "q1"}, GalleryIDs: []string{"g0", "g\u00e9", "g2"}, Identity: retrieval.FromContent(),
			Exclusions: []retrieval.Pair{{QueryID: "q0", GalleryID: "g0"}}}, rel)
		if err != nil {
			f.Fatal(err)
		}
		doc, err := RelevanceDocument(ds, "k")
		if err != nil {
			f.Fatal(err)
		}
		// Small seeds keep the fuzzer's minimisation quick: the fields no
		// fingerprint covers are left out.
		doc.DatasetIdentity, doc.VertebraeVersion, doc.OutputKey = nil, "", ""
		raw, err := canonjson.Marshal(doc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeRelevanceView(ctx, "k", bytes.NewReader(data), viewOptions{held: func(g int) bool { return g%2 == 0 }, keepIDs: true})
		if err != nil {
			return
		}
		doc := &Relevance{}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(doc); err != nil {
			t.Fatalf("streamed a document encoding/json rejects: %v", err)
		}
		if doc.ArtifactType != TypeRelevance {
			t.Fatalf("streamed a %q document", doc.ArtifactType)
		}
		full, err := relevanceProtocol("k", doc)
		if err != nil {
			t.Fatalf("streamed a document ReadRelevance rejects: %v", err)
		}
		for g, id := range v.Doc.GalleryIDs {
			if g%2 == 0 && id != full.Doc.GalleryIDs[g] || g%2 == 1 && id != "" {
				t.Fatalf("gallery row %d: %q, whole document %q", g, id, full.Doc.GalleryIDs[g])
			}
		}
		if sum, _ := IDsSHA256(full.Doc.GalleryIDs); sum != v.galleryIDsSHA256 {
			t.Fatal("ids_sha256 differs")
		}
		if !reflect.DeepEqual(v.Positives, full.Positives) || !reflect.DeepEqual(v.Exclusions, full.Exclusions) ||
			(v.Classes == nil) != (full.Classes == nil) || v.Classes != nil && !reflect.DeepEqual(v.Classes.Gallery, full.Classes.Gallery) {
			t.Fatal("protocol differs from the whole document's")
		}
	})
}

// A bidirectional modulo shard scores a contiguous block of reverse
// queries besides its strided rows: its relevance view holds the IDs of
// both (the messages of a reverse-query failure name them), and no others.
func TestModuloReverseBlockIDsAreHeld(t *testing.T) {
	t.Parallel()
	for _, labels := range []bool{false, true} {
		f := windowFixture(t, mem.New(), 9, 40, 5, labels, 3)
		cfg := retrieval.DefaultConfig()
		cfg.Bidirectional = true
		req := f.request(cfg)
		full, err := f.s.ReadRelevance(ctx, f.rk)
		if err != nil {
			t.Fatal(err)
		}
		shard := rank.Shard{Index: 1, Total: 3, Layout: rank.Modulo}
		j, err := f.s.prepareJob(ctx, req, shardRelevance(cfg, shard))
		if err != nil {
			t.Fatal(err)
		}
		p, rev, err := f.s.loadWindow(ctx, j, shard, true)
		if err != nil {
			t.Fatal(err)
		}
		if rev == nil || rev.Rows.Rows() == 0 {
			t.Fatal("no reverse block")
		}
		lo, hi := rev.First, rev.First+rev.Rows.Rows()
		for g, id := range p.GalleryIDs {
			want := ""
			if shard.Holds(len(p.GalleryIDs), g) || g >= lo && g < hi {
				want = full.Doc.GalleryIDs[g]
			}
			if id != want {
				t.Fatalf("labels %v: gallery row %d (reverse block [%d, %d)): ID %q, want %q", labels, g, lo, hi, id, want)
			}
		}
	}
}

// countStrings (a trusted view that keeps no gallery ID) counts the
// elements of a string array as the decoding scanner does, leaves the
// reader just after the array, and refuses what is not an array of
// strings, wherever the reader's buffer boundaries fall.
func TestCountStrings(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 9))
	pieces := []string{`a`, `\"`, `\\`, `\u0041`, `é`, `\n`, `,`, `]`, `[`, ` `, `x\\`, `\\\"`}
	for trial := range 400 {
		n := r.IntN(40)
		var b strings.Builder
		b.WriteString(" [")
		for i := range n {
			if i > 0 {
				b.WriteString([]string{",", " , ", ",\n"}[r.IntN(3)])
			}
			b.WriteByte('"')
			for range r.IntN(6) {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			b.WriteByte('"')
		}
		b.WriteString(" ] ,\"next\"")
		text := b.String()
		for _, size := range []int{16, 17, 64, 64 << 10} {
			sc := &jsonScanner{r: bufio.NewReaderSize(strings.NewReader(text), size)}
			got, err := sc.countStrings(ctx)
			want := 0
			ref := &jsonScanner{r: bufio.NewReaderSize(strings.NewReader(text), size)}
			werr := ref.strings(func([]byte) error { want++; return nil })
			if err != nil || werr != nil || got != want || got != n {
				t.Fatalf("trial %d, buffer %d: %q: counted %d (%v), decoded %d (%v), built %d", trial, size, text, got, err, want, werr, n)
			}
			if c, err := sc.next(); err != nil || c != ',' {
				t.Fatalf("trial %d, buffer %d: after the array: %q %v", trial, size, c, err)
			}
		}
	}
	for _, bad := range []string{``, `{}`, `["a" "b"]`, `["a",]`, `[,"a"]`, `["a"`, `["a\"]`, `[1]`, `["a",1]`} {
		sc := &jsonScanner{r: bufio.NewReaderSize(strings.NewReader(bad), 16)}
		if n, err := sc.countStrings(ctx); !errors.Is(err, errStream) {
			t.Errorf("%q: %d, %v; want errStream", bad, n, err)
		}
	}
}

// A worker keeping no gallery ID names rows by reading the relevance
// document once for all the rows it may name (a shard's), not once per
// message row; a row outside them is still named.
func TestIDLookupReadsTheDocumentOnce(t *testing.T) {
	t.Parallel()
	cs := &countingStore{Store: mem.New()}
	f := windowFixture(t, cs, 4, 50, 3, false, 8)
	shard := rank.Shard{Index: 1, Total: 3}
	cs.read.Store(0)
	if got := f.s.galleryID(ctx, f.rk, 20); got != "g20" {
		t.Fatalf("row 20 named %q", got)
	}
	one := cs.read.Load() // one streamed read of the document
	name := f.s.idLookup(ctx, f.rk, func(g int) bool { return shard.Holds(50, g) })
	cs.read.Store(0)
	for _, g := range []int{17, 20, 32, 17} {
		if !shard.Holds(50, g) {
			t.Fatalf("the shard does not hold row %d", g)
		}
		if got := name(g); got != fmt.Sprintf("g%d", g) {
			t.Fatalf("row %d named %q", g, got)
		}
	}
	if n := cs.read.Load(); n != one {
		t.Fatalf("four names of the shard's rows read %d bytes; one read of the document is %d", n, one)
	}
	if got := name(2); got != "g2" {
		t.Fatalf("row 2, outside the shard: %q", got)
	}
}
