package columnar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The arrow IPC reader trusts the flatbuffer metadata: vector lengths and
// compressed-buffer sizes become allocation sizes before anything is
// checked, so a few corrupt bytes can demand terabytes and kill the process
// (a fatal error, not a recoverable panic). scanFile and scanStream walk the
// same metadata first, bounds-checking every vector, buffer and declared
// size against the file. They also yield the row count the output is sized
// by, which the library only exposes after loading each batch. Layouts:
// format/File.fbs, format/Message.fbs and format/Schema.fbs of the Arrow
// specification.

const (
	headerSchema      = 1 // MessageHeader union tags
	headerDictionary  = 2
	headerRecordBatch = 3
	typeUnion         = 14 // Type union tag of Union
	blockSize         = 24 // struct Block: offset int64, metaDataLength int32, pad, bodyLength int64
	bufferSize        = 16 // struct Buffer and struct FieldNode: two int64
	continuation      = ^uint32(0)
	maxRows           = 1 << 53 // far beyond any real file; keeps sums exact
	maxNesting        = 64      // nested field depth; real schemas use a handful
	// A compressed buffer may claim to inflate to at most maxInflate times
	// the file size in total (beyond minInflateBudget): LZ4 cannot exceed
	// ~255x and float data rarely compresses 2x, so only forged sizes fail.
	maxInflate       = 256
	minInflateBudget = 64 << 20
)

var (
	errFBRange   = errors.New("metadata offset out of range")
	errTruncated = errors.New("message cut short")
)

// ipcStats is what the scan learns.
type ipcStats struct {
	rows     int64 // total record batch rows
	bufBytes int64 // total (decompressed) buffer bytes: bounds the matrix
	inflate  int64 // decompressed bytes claimed so far
	budget   int64 // limit on inflate
}

// fb is a flatbuffer with bounds-checked little-endian reads.
type fb []byte

func (b fb) u32(p int) (uint32, error) {
	if p < 0 || p > len(b)-4 {
		return 0, errFBRange
	}
	return binary.LittleEndian.Uint32(b[p:]), nil
}

func (b fb) u16(p int) (int, error) {
	if p < 0 || p > len(b)-2 {
		return 0, errFBRange
	}
	return int(binary.LittleEndian.Uint16(b[p:])), nil
}

func (b fb) i64(p int) (int64, error) {
	if p < 0 || p > len(b)-8 {
		return 0, errFBRange
	}
	return int64(binary.LittleEndian.Uint64(b[p:])), nil
}

// deref follows the uoffset stored at p.
func (b fb) deref(p int) (int, error) {
	u, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	q := p + int(u)
	if q < p || q > len(b)-4 {
		return 0, errFBRange
	}
	return q, nil
}

// field returns the position of field slot of the table at tab, or 0 when
// the field is absent (flatbuffers then means its default).
func (b fb) field(tab, slot int) (int, error) {
	so, err := b.u32(tab)
	if err != nil {
		return 0, err
	}
	vt := tab - int(int32(so))
	vtLen, err := b.u16(vt)
	if err != nil {
		return 0, err
	}
	o := 4 + 2*slot
	if o >= vtLen { // as the flatbuffers runtime decides presence
		return 0, nil
	}
	fo, err := b.u16(vt + o)
	if err != nil || fo == 0 {
		return 0, err
	}
	if tab+fo >= len(b) {
		return 0, errFBRange
	}
	return tab + fo, nil
}

// byteField reads a ubyte field (0 when absent).
func (b fb) byteField(tab, slot int) (byte, error) {
	p, err := b.field(tab, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	return b[p], nil
}

// i64Field reads a long field (0 when absent).
func (b fb) i64Field(tab, slot int) (int64, error) {
	p, err := b.field(tab, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	return b.i64(p)
}

// table returns the sub-table at field slot (0 when absent).
func (b fb) table(tab, slot int) (int, error) {
	p, err := b.field(tab, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	return b.deref(p)
}

// vector returns the start and length of the vector at field slot, having
// checked that n elements of elem bytes fit in the buffer.
func (b fb) vector(tab, slot, elem int) (start, n int, err error) {
	v, err := b.table(tab, slot) // a vector is reached like a table
	if err != nil || v == 0 {
		return 0, 0, err
	}
	u, err := b.u32(v)
	if err != nil {
		return 0, 0, err
	}
	if int64(u) > int64(len(b)-v-4)/int64(elem) {
		return 0, 0, errFBRange
	}
	return v + 4, int(u), nil
}

// tables checks each table (or string) of a vector of offsets with fn.
func (b fb) tables(tab, slot int, fn func(t int) error) error {
	start, n, err := b.vector(tab, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		t, err := b.deref(start + 4*i)
		if err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

// str checks the string at field slot.
func (b fb) str(tab, slot int) error {
	_, _, err := b.vector(tab, slot, 1)
	return err
}

func (b fb) keyValues(tab, slot int) error {
	return b.tables(tab, slot, func(kv int) error {
		if err := b.str(kv, 0); err != nil {
			return err
		}
		return b.str(kv, 1)
	})
}

// checkSchema verifies a Schema table: fields, custom_metadata, features.
func (b fb) checkSchema(tab int) error {
	if err := b.tables(tab, 1, func(f int) error { return b.checkField(f, 0) }); err != nil {
		return err
	}
	if err := b.keyValues(tab, 2); err != nil {
		return err
	}
	_, _, err := b.vector(tab, 3, 8)
	return err
}

// checkField verifies a Field table: name, type, dictionary, children,
// custom_metadata.
func (b fb) checkField(tab, depth int) error {
	if depth > maxNesting {
		return errors.New("fields nested too deeply")
	}
	if err := b.str(tab, 0); err != nil {
		return err
	}
	tt, err := b.byteField(tab, 2)
	if err != nil {
		return err
	}
	typ, err := b.table(tab, 3)
	if err != nil {
		return err
	}
	if tt == typeUnion && typ != 0 {
		if _, _, err := b.vector(typ, 1, 4); err != nil { // typeIds
			return err
		}
	}
	if dict, err := b.table(tab, 4); err != nil {
		return err
	} else if dict != 0 {
		if _, err := b.table(dict, 1); err != nil { // indexType
			return err
		}
	}
	if err := b.tables(tab, 5, func(c int) error { return b.checkField(c, depth+1) }); err != nil {
		return err
	}
	return b.keyValues(tab, 6)
}

// checkBatch verifies a RecordBatch table whose body is body and returns
// its length.
func (b fb) checkBatch(tab int, body []byte, st *ipcStats) (int64, error) {
	rows, err := b.i64Field(tab, 0)
	if err != nil {
		return 0, err
	}
	if rows < 0 || rows > maxRows {
		return 0, fmt.Errorf("record batch length %d", rows)
	}
	comp, err := b.table(tab, 3)
	if err != nil {
		return 0, err
	}
	start, n, err := b.vector(tab, 2, bufferSize) // buffers
	if err != nil {
		return 0, err
	}
	var total int64 // this batch's buffer bytes, decompressed
	for i := range n {
		off, _ := b.i64(start + i*bufferSize)
		size, _ := b.i64(start + i*bufferSize + 8)
		if off < 0 || size < 0 || off > int64(len(body)) || size > int64(len(body))-off {
			return 0, fmt.Errorf("buffer %d (offset %d, length %d) outside the %d-byte body", i, off, size, len(body))
		}
		if comp == 0 || size == 0 {
			total += size
			continue
		}
		if size < 8 {
			return 0, fmt.Errorf("compressed buffer %d of %d bytes", i, size)
		}
		raw := int64(binary.LittleEndian.Uint64(body[off:]))
		switch {
		case raw == -1: // stored uncompressed
			total += size - 8
		case raw < 0 || raw > st.budget-st.inflate:
			return 0, fmt.Errorf("compressed buffer %d claims %d bytes uncompressed", i, raw)
		default:
			st.inflate += raw
			total += raw
		}
	}
	st.bufBytes += total

	// The loader sizes a slice by each variadic count before using it.
	vstart, vn, err := b.vector(tab, 4, 8) // variadicBufferCounts
	if err != nil {
		return 0, err
	}
	for i := range vn {
		if v, _ := b.i64(vstart + 8*i); v < 0 || v > int64(n) {
			return 0, fmt.Errorf("variadic buffer count %d of %d buffers", v, n)
		}
	}

	// Any array but a top-level one of type Null needs a bit per element
	// in some buffer; the bound keeps forged lengths from sizing
	// allocations (dictionary deltas are concatenated by length).
	maxLen := max(rows, 8*total+64)
	start, n, err = b.vector(tab, 1, bufferSize) // nodes
	if err != nil {
		return 0, err
	}
	for i := range n {
		length, _ := b.i64(start + i*bufferSize)
		nulls, _ := b.i64(start + i*bufferSize + 8)
		if length < 0 || length > maxLen || nulls < 0 || nulls > length {
			return 0, fmt.Errorf("field node %d: length %d, null count %d", i, length, nulls)
		}
	}
	return rows, nil
}

// checkMessage verifies the encapsulated message at data[pos:] with body
// bodyLen bytes after it (bodyLen < 0: take the message's own). It returns
// the prefix+metadata size (0 at an end-of-stream marker), the body length,
// the header type and the rows it adds.
func checkMessage(data []byte, pos int, bodyLen int64, st *ipcStats) (size int, body int64, kind byte, rows int64, err error) {
	b := fb(data)
	n, err := b.u32(pos)
	if err != nil {
		return 0, 0, 0, 0, errTruncated
	}
	hdr := 4
	if n == continuation {
		if n, err = b.u32(pos + 4); err != nil {
			return 0, 0, 0, 0, errTruncated
		}
		hdr = 8
	}
	if n == 0 {
		return 0, 0, 0, 0, nil
	}
	if int64(n) > int64(len(data)-pos-hdr) {
		return 0, 0, 0, 0, errTruncated
	}
	size = hdr + int(n)
	m := fb(data[pos+hdr : pos+size])
	root, err := m.deref(0)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if err := m.keyValues(root, 4); err != nil {
		return 0, 0, 0, 0, err
	}
	if body = bodyLen; body < 0 {
		if body, err = m.i64Field(root, 3); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if body < 0 || body > int64(len(data)-pos-size) {
		return 0, 0, 0, 0, errTruncated
	}
	bodyBytes := data[pos+size : pos+size+int(body)]
	kind, err = m.byteField(root, 1)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	h, err := m.table(root, 2)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if h == 0 && kind != 0 {
		return 0, 0, 0, 0, errors.New("message without header")
	}
	switch kind {
	case headerSchema:
		err = m.checkSchema(h)
	case headerDictionary:
		var rb int
		if rb, err = m.table(h, 1); err == nil && rb != 0 {
			_, err = m.checkBatch(rb, bodyBytes, st)
		}
	case headerRecordBatch:
		rows, err = m.checkBatch(h, bodyBytes, st)
	default:
		err = fmt.Errorf("unexpected message type %d", kind)
	}
	return size, body, kind, rows, err
}

func newStats(fileSize int) *ipcStats {
	return &ipcStats{budget: max(minInflateBudget, maxInflate*int64(fileSize))}
}

// scanStream verifies every message of an IPC stream.
func scanStream(data []byte) (*ipcStats, error) {
	st := newStats(len(data))
	for pos := 0; pos < len(data); {
		size, body, _, rows, err := checkMessage(data, pos, -1, st)
		if err != nil {
			return nil, err
		}
		if size == 0 {
			break // end-of-stream marker
		}
		pos += size + int(body)
		if st.rows += rows; st.rows > maxRows {
			return nil, errors.New("too many rows")
		}
	}
	return st, nil
}

// scanFile verifies the footer of an IPC file (its schema, dictionary and
// record batch blocks) and the messages it points at. The caller has
// checked the leading and trailing magic.
func scanFile(data []byte) (*ipcStats, error) {
	st := newStats(len(data))
	end := len(data) - len(ipcMagic) - 4
	flen, err := fb(data).u32(end)
	if err != nil {
		return nil, err
	}
	if flen == 0 || int64(flen) > int64(end-8) {
		return nil, fmt.Errorf("footer length %d", flen)
	}
	f := fb(data[end-int(flen) : end])
	root, err := f.deref(0)
	if err != nil {
		return nil, err
	}
	sc, err := f.table(root, 1)
	if err != nil {
		return nil, err
	}
	if sc == 0 {
		return nil, errors.New("footer without schema")
	}
	if err := f.checkSchema(sc); err != nil {
		return nil, err
	}
	for slot, want := range map[int]byte{2: headerDictionary, 3: headerRecordBatch} {
		start, n, err := f.vector(root, slot, blockSize)
		if err != nil {
			return nil, err
		}
		for i := range n {
			p := start + i*blockSize
			off, _ := f.i64(p)
			body, _ := f.i64(p + 16)
			if off < 0 || off >= int64(len(data)) {
				return nil, fmt.Errorf("block %d at offset %d", i, off)
			}
			_, _, kind, rows, err := checkMessage(data, int(off), body, st)
			if err != nil {
				return nil, err
			}
			if kind != want {
				return nil, fmt.Errorf("block %d holds message type %d, want %d", i, kind, want)
			}
			if st.rows += rows; st.rows > maxRows {
				return nil, errors.New("too many rows")
			}
		}
	}
	if st.rows > math.MaxInt {
		return nil, errors.New("too many rows")
	}
	return st, nil
}
