package admit

import (
	"fmt"
	"math"
	"sync"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// Budget is the resident-memory budget B of one run (SPEC §7.4), shared by
// its query and gallery endpoints: rows an endpoint keeps in memory stay
// charged while the next endpoint is encoded, until the endpoint is closed.
// A nil *Budget means "no limit, no spill". Budget is safe for concurrent use.
type Budget struct {
	limit      int64
	fixed      int64
	allowSpill bool
	spillDir   string

	mu       sync.Mutex
	retained int64
	stats    []Stats
}

// Stats describes one successfully encoded endpoint.
type Stats struct {
	Owner   string
	Rows    int
	Cols    int
	DType   matrix.DType
	Sparse  bool
	Batches int // encoder calls
	// ResidentBytes is what the endpoint is charged against the budget
	// while it is open (0 when spilled: mapped files are not resident).
	ResidentBytes int64
	Spilled       bool
	SpillBytes    int64  // total size of the endpoint's spill files
	SpillDir      string // private vertebrae-spill-* directory, removed by close
}

// NewBudget returns a budget of limit bytes with a fixed charge (model state
// plus one raw input batch). A fixed charge above the limit fails here, so a
// run that creates its budget first fails before anything is encoded.
func NewBudget(limit, fixed int64, allowSpill bool, spillDir string) (*Budget, error) {
	if limit < 1 {
		return nil, fmt.Errorf("memory budget must be at least 1 byte; got %d", limit)
	}
	if fixed < 0 {
		return nil, fmt.Errorf("fixed memory charge must be >= 0 bytes; got %d (memory budget %d bytes)", fixed, limit)
	}
	if fixed > limit {
		return nil, &BudgetError{Required: fixed, Budget: limit}
	}
	return &Budget{limit: limit, fixed: fixed, allowSpill: allowSpill, spillDir: spillDir}, nil
}

// BudgetFor resolves cfg on this machine (SPEC §7.2) and returns its budget.
func BudgetFor(cfg memory.Config) (*Budget, error) {
	limit, err := memory.Resolve(cfg)
	if err != nil {
		return nil, err
	}
	return NewBudget(limit, cfg.FixedBytes(), cfg.AllowDiskSpill, cfg.SpillDir)
}

// Limit is B in bytes (math.MaxInt64 for a nil budget).
func (b *Budget) Limit() int64 {
	if b == nil {
		return math.MaxInt64
	}
	return b.limit
}

// Fixed is the fixed charge F in bytes.
func (b *Budget) Fixed() int64 {
	if b == nil {
		return 0
	}
	return b.fixed
}

// AllowSpill reports whether endpoints may be staged in spill files.
func (b *Budget) AllowSpill() bool { return b != nil && b.allowSpill }

// SpillDir is the configured parent of spill directories ("" = os.TempDir()).
func (b *Budget) SpillDir() string {
	if b == nil {
		return ""
	}
	return b.spillDir
}

// Retained is the number of endpoint bytes currently charged.
func (b *Budget) Retained() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.retained
}

// Stats returns one entry per endpoint encoded so far, in completion order.
func (b *Budget) Stats() []Stats {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Stats(nil), b.stats...)
}

// admit charges cost when F + retained + cost <= B. It returns that sum
// either way (the R of the failure message).
func (b *Budget) admit(cost int64) (required int64, ok bool) {
	if b == nil {
		return cost, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	required = addSat(addSat(b.fixed, b.retained), cost)
	if required > b.limit {
		return required, false
	}
	b.retained += cost
	return required, true
}

// fits reports whether cost would be admitted now, without charging it.
func (b *Budget) fits(cost int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return addSat(addSat(b.fixed, b.retained), cost) <= b.limit
}

func (b *Budget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.retained -= n
	b.mu.Unlock()
}

func (b *Budget) record(s Stats) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.stats = append(b.stats, s)
	b.mu.Unlock()
}

// maxAllocBytes bounds single heap allocations so that make never panics on
// an absurd size (the Go heap is limited to 2^48 bytes on 64-bit hosts).
const maxAllocBytes = min(1<<47, math.MaxInt)

// addSat and mulSat saturate at math.MaxInt64 (operands are >= 0): an
// overflowing estimate must still compare as "too large".
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
