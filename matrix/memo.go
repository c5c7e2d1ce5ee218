package matrix

// Memo returns the value remembered on m's read-only storage under key,
// computing it with compute the first time. Values nobody can change have
// facts that one scan establishes for good — the row norms scoring derives
// from a mapped gallery file, say — and a run that checks an endpoint at
// load, at dataset construction and before scoring then reads it once. On
// storage that can change nothing is remembered: compute runs every time.
// Concurrent first calls may each compute; all get the first value stored.
// key must be comparable and should be a value of the caller's own
// unexported type, as with context keys. A row slice remembers nothing of
// its parent.
func (m *Dense) Memo(key any, compute func() any) any {
	if m.memo == nil {
		return compute()
	}
	if v, ok := m.memo.Load(key); ok {
		return v
	}
	v, _ := m.memo.LoadOrStore(key, compute())
	return v
}

// MarkFinite records that the caller's own full scan of m found no NaN or
// ±Inf, so FirstNonFinite and FirstNonFiniteParallel need not read m again
// (a fused pass that learns more than finiteness, such as rank's). It does
// nothing unless m's storage is read-only. Call it only after a scan of
// every value: every check that trusts the record would pass a bad one.
func (m *Dense) MarkFinite() { m.markFinite() }
