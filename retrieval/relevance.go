package retrieval

// Relevance is one of the four relevance forms of SPEC §2.3. The form is
// always explicit: build it with DenseRelevance, CSRRelevance,
// RecordRelevance or LabelRelevance.
type Relevance interface{ relevanceForm() string }

type denseRelevance struct{ m [][]float64 }

// DenseRelevance is form (a): m[i][j] is the grade of (query i, gallery j).
func DenseRelevance(m [][]float64) Relevance { return denseRelevance{m: m} }

func (denseRelevance) relevanceForm() string { return "dense" }

// SparseRelevance holds CSR components of an n_q × n_g relevance matrix as
// stored on disk: within a row indices may be unsorted and may repeat
// (repeated coordinates are summed, SPEC §2.4).
type SparseRelevance struct {
	Rows, Cols int
	Indptr     []int64
	Indices    []int64
	Data       []float64
}

type csrRelevance struct{ s SparseRelevance }

// CSRRelevance is form (b). It is read from stored entries only and never
// densified.
func CSRRelevance(s SparseRelevance) Relevance { return csrRelevance{s: s} }

func (csrRelevance) relevanceForm() string { return "csr" }

// Record is one relevance judgement of form (c). Origin, when set (for
// example "qrels.tsv:12"), is how messages refer to the record.
type Record struct {
	QueryID   string
	GalleryID string
	Grade     float64
	Origin    string
}

type recordRelevance struct{ recs []Record }

// RecordRelevance is form (c).
func RecordRelevance(records []Record) Relevance { return recordRelevance{recs: records} }

func (recordRelevance) relevanceForm() string { return "records" }

type labelRelevance struct{ query, gallery []string }

// LabelRelevance is form (d): grade 1 where the labels are equal (SPEC §2.7).
func LabelRelevance(queryLabels, galleryLabels []string) Relevance {
	return labelRelevance{query: queryLabels, gallery: galleryLabels}
}

func (labelRelevance) relevanceForm() string { return "labels" }

// Pair names a (query ID, gallery ID) pair, used for exclusions. Origin works
// as in Record.
type Pair struct {
	QueryID   string
	GalleryID string
	Origin    string
}

// Positive is a stored relevance entry: a gallery index with grade > 0.
type Positive struct {
	Index int
	Grade float64
}
