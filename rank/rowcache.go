package rank

// rowCache gives the working rows of one gallery block: a view of the
// stored rows when they are the working values, the whole block produced
// once, or (lazy) only the rows a verification asks for, produced once per
// block (the float32 screen verifies few pairs, and producing a float64
// block costs as much as screening it). Rows are those of source.block64
// and source.block32, bit for bit.
type rowCache[T working] struct {
	src   *source
	b     block
	full  []T     // the whole block (view or produced), when held
	slot  []int32 // lazy: per row, 1 + its index in cache (0: not produced)
	cache []T
	buf   []T
	tmp   []float64
}

// reset prepares the cache for block b: the whole block at once, or lazily.
func (r *rowCache[T]) reset(src *source, b block, lazy bool) {
	r.src, r.b = src, b
	r.full = nil
	r.cache = r.cache[:0]
	r.tmp = growTo(r.tmp, src.cols)
	if v := direct[T](src, b); v != nil {
		r.full = v
		return
	}
	if lazy {
		r.slot = growTo(r.slot, b.n)
		clear(r.slot)
		return
	}
	r.buf = growTo(r.buf, b.n*src.cols)
	r.full = blockRows(src, b, r.buf, r.tmp)
}

// direct is the block's stored rows when they are its working values.
func direct[T working](src *source, b block) []T {
	if b.n > 1 && b.stride != src.stride { // the block's rows are not consecutive stored rows
		return nil
	}
	d, i := src.cols, src.local(b.g0)
	if b.n < 1 || i < 0 || i+b.n > src.rows { // a block outside the held rows (an empty window's)
		return nil
	}
	var v any
	switch any(*new(T)).(type) {
	case float64:
		if src.direct64 != nil {
			v = src.direct64[i*d : (i+b.n)*d]
		}
	case float32:
		if src.direct32 != nil {
			v = src.direct32[i*d : (i+b.n)*d]
		}
	}
	if v == nil {
		return nil
	}
	return v.([]T)
}

// stored is row j when the whole block is held, else nil.
func (r *rowCache[T]) stored(j int) []T {
	if r.full == nil {
		return nil
	}
	d := r.src.cols
	return r.full[j*d : (j+1)*d]
}

// row is the working values of row j (read-only).
func (r *rowCache[T]) row(j int) []T {
	if v := r.stored(j); v != nil {
		return v
	}
	d := r.src.cols
	if k := int(r.slot[j]); k > 0 {
		return r.cache[(k-1)*d : k*d]
	}
	k := len(r.cache) / d
	if cap(r.cache) < (k+1)*d {
		r.cache = append(make([]T, 0, 2*(k+1)*d), r.cache...)
	}
	r.cache = r.cache[:(k+1)*d]
	g := r.b.global(j)
	dst := r.cache[k*d : (k+1)*d]
	copy(dst, produce(r.src, g, g+1, dst, r.tmp))
	r.slot[j] = int32(k + 1)
	return dst
}

// span returns rows [j0, j1) contiguously (producing the whole block once
// when it is not held).
func (r *rowCache[T]) span(j0, j1 int) []T {
	if r.full == nil {
		r.buf = growTo(r.buf, r.b.n*r.src.cols)
		r.full = blockRows(r.src, r.b, r.buf, r.tmp)
	}
	d := r.src.cols
	return r.full[j0*d : j1*d]
}

// pairBase is the slice holding every produced row of the block, and
// pairOffset(j) the element offset of row j in it (after row(j)).
func (r *rowCache[T]) pairBase() []T {
	if r.full != nil {
		return r.full
	}
	return r.cache
}

func (r *rowCache[T]) pairOffset(j int) int {
	d := r.src.cols
	if r.full != nil {
		return j * d
	}
	return (int(r.slot[j]) - 1) * d
}
