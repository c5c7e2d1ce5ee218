package kernel

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// This file runs the generated tile kernels of kernel_amd64.s through a small
// interpreter of the Go assembly they are written in, so that kernels this
// CPU cannot execute (AVX-512 on most development machines) are still checked
// end to end through the real driver: their loop structure, addressing, lane
// widths, register use and transposing epilogue. The interpreter also checks
// the tile contract: every load must fall in the gallery rows or the packed
// panel, and every store on one of the nq×ng scores of the tile.
//
// What it cannot check is the machine encoding (the Go assembler's job) and
// the instruction set each kernel needs; TestAVX512NeedsOnlyF checks the
// latter from the generator's annotations.

type asmFunc struct {
	name   string
	frame  int
	instrs []asmInstr
	labels map[string]int
}

type asmInstr struct {
	op   string
	args []string
	line int
}

var textRE = regexp.MustCompile(`^TEXT ·(\w+)\(SB\), (?:\w+, )?\$(\d+)-(\d+)$`)

func parseAsm(t *testing.T, path string) map[string]*asmFunc {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]*asmFunc{}
	var f *asmFunc
	for n, line := range strings.Split(string(src), "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "TEXT"):
			m := textRE.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s:%d: cannot parse %q", path, n+1, line)
			}
			frame, _ := strconv.Atoi(m[2])
			f = &asmFunc{name: m[1], frame: frame, labels: map[string]int{}}
			funcs[f.name] = f
		case strings.HasSuffix(line, ":"):
			f.labels[strings.TrimSuffix(line, ":")] = len(f.instrs)
		default:
			op, rest, _ := strings.Cut(line, " ")
			var args []string
			for a := range strings.SplitSeq(rest, ",") {
				if a = strings.TrimSpace(a); a != "" {
					args = append(args, a)
				}
			}
			f.instrs = append(f.instrs, asmInstr{op, args, n + 1})
		}
	}
	return funcs
}

// region is memory the interpreted code may touch.
type region struct {
	name  string
	base  uintptr
	b     []byte
	write bool
	// For the output: the row stride and the bytes of a row it may write.
	ldc, rowBytes int
}

type cpuState struct {
	t      *testing.T
	f      *asmFunc
	gp     map[string]uint64
	vec    [32][64]byte
	k      [8]uint64 // opmask registers
	zf, le bool      // zero (or equal) flag; "less or equal" of the last CMPQ
	args   map[string]uint64
	mem    []region
	stores int
}

var memRE = regexp.MustCompile(`^(-?\d+)?\((\w+)\)(?:\((\w+)\*(\d)\))?$`)

func (s *cpuState) fail(in asmInstr, format string, a ...any) {
	s.t.Helper()
	s.t.Fatalf("%s line %d (%s %s): %s", s.f.name, in.line, in.op, strings.Join(in.args, ", "), fmt.Sprintf(format, a...))
}

func (s *cpuState) addr(in asmInstr, arg string) uintptr {
	m := memRE.FindStringSubmatch(arg)
	if m == nil {
		s.fail(in, "bad memory operand %q", arg)
	}
	disp, _ := strconv.Atoi(m[1])
	a := s.gp[m[2]] + uint64(disp)
	if m[3] != "" {
		scale, _ := strconv.Atoi(m[4])
		a += s.gp[m[3]] * uint64(scale)
	}
	return uintptr(a)
}

// bytes returns the n bytes of memory at a, checking the tile contract.
func (s *cpuState) bytes(in asmInstr, a uintptr, n int, write bool) []byte {
	for _, r := range s.mem {
		if a < r.base || a+uintptr(n) > r.base+uintptr(len(r.b)) {
			continue
		}
		off := int(a - r.base)
		if write && !r.write {
			s.fail(in, "store into %s", r.name)
		}
		if write && r.ldc > 0 && (off%r.ldc)+n > r.rowBytes {
			s.fail(in, "store past the scores of the tile in %s (offset %d)", r.name, off)
		}
		return r.b[off : off+n]
	}
	s.fail(in, "access of %d bytes at %#x outside the tile's memory", n, a)
	return nil
}

func vecReg(name string) (int, int, bool) {
	if len(name) < 2 || (name[0] != 'X' && name[0] != 'Y' && name[0] != 'Z') {
		return 0, 0, false
	}
	i, err := strconv.Atoi(name[1:])
	if err != nil {
		return 0, 0, false
	}
	switch name[0] {
	case 'X':
		return i, 16, true
	case 'Y':
		return i, 32, true
	}
	return i, 64, true
}

func (s *cpuState) imm(in asmInstr, arg string) uint64 {
	v, err := strconv.ParseInt(strings.TrimPrefix(arg, "$"), 0, 64)
	if err != nil {
		s.fail(in, "bad immediate %q", arg)
	}
	return uint64(v)
}

func (s *cpuState) src64(in asmInstr, arg string) uint64 {
	switch {
	case strings.HasPrefix(arg, "$"):
		return s.imm(in, arg)
	case strings.HasSuffix(arg, "(FP)"):
		name, _, _ := strings.Cut(arg, "+")
		v, ok := s.args[name]
		if !ok {
			s.fail(in, "unknown argument %q", arg)
		}
		return v
	case strings.Contains(arg, "("):
		return *(*uint64)(unsafe.Pointer(&s.bytes(in, s.addr(in, arg), 8, false)[0]))
	}
	v, ok := s.gp[arg]
	if !ok {
		s.fail(in, "unknown register %q", arg)
	}
	return v
}

func (s *cpuState) run() {
	in := asmInstr{}
	for pc := 0; ; {
		if pc >= len(s.f.instrs) {
			s.fail(in, "ran off the end")
		}
		in = s.f.instrs[pc]
		pc++
		a := in.args
		jump := func(cond bool) {
			if cond {
				target, ok := s.f.labels[a[0]]
				if !ok {
					s.fail(in, "no label %q", a[0])
				}
				pc = target
			}
		}
		switch in.op {
		case "RET":
			return
		case "MOVQ", "MOVL":
			n := 8
			if in.op == "MOVL" {
				n = 4
			}
			var v uint64
			if strings.Contains(a[0], "(") && !strings.HasSuffix(a[0], "(FP)") {
				b := s.bytes(in, s.addr(in, a[0]), n, false)
				for i := n - 1; i >= 0; i-- {
					v = v<<8 | uint64(b[i])
				}
			} else {
				v = s.src64(in, a[0])
				if n == 4 {
					v &= 1<<32 - 1
				}
			}
			if strings.Contains(a[1], "(") {
				b := s.bytes(in, s.addr(in, a[1]), n, true)
				for i := range n {
					b[i] = byte(v >> (8 * i))
				}
				s.stores++
			} else {
				s.gp[a[1]] = v
			}
		case "LEAQ":
			s.gp[a[1]] = uint64(s.addr(in, a[0]))
		case "ADDQ":
			s.gp[a[1]] += s.src64(in, a[0])
		case "ANDQ":
			s.gp[a[1]] &= s.src64(in, a[0])
			s.zf = s.gp[a[1]] == 0
		case "IMUL3Q":
			s.gp[a[2]] = s.src64(in, a[1]) * s.imm(in, a[0])
		case "PREFETCHT0", "PREFETCHT1":
			// A hint that never faults: its address may lie past the tile.
			s.addr(in, a[0])
		case "SHLQ":
			s.gp[a[1]] <<= s.src64(in, a[0])
			s.zf = s.gp[a[1]] == 0
		case "KMOVW":
			k := kReg(in, s, a[1])
			s.k[k] = s.gp[a[0]] & 0xffff
		case "VUNPCKLPS", "VUNPCKHPS", "VUNPCKLPD", "VUNPCKHPD":
			// Per 128-bit chunk: interleave the low (or high) halves of
			// the second source (a[1]) and the first (a[0]).
			x, _, _ := vecReg(a[0])
			y, _, _ := vecReg(a[1])
			z, w, _ := vecReg(a[2])
			es := 4
			if strings.HasSuffix(in.op, "PD") {
				es = 8
			}
			half := 0
			if strings.Contains(in.op, "UNPCKH") {
				half = 8
			}
			src1, src2 := s.vec[y], s.vec[x]
			var r [64]byte
			for c := 0; c < w; c += 16 {
				for e := 0; e < 8/es; e++ {
					o := c + half + e*es
					copy(r[c+2*e*es:], src1[o:o+es])
					copy(r[c+(2*e+1)*es:], src2[o:o+es])
				}
			}
			s.vec[z] = r
			clear(s.vec[z][w:])
		case "VEXTRACTF128": // the chosen half into memory or an xmm register
			h := int(s.imm(in, a[0]) & 1)
			x, _, _ := vecReg(a[1])
			half := s.vec[x][16*h : 16*h+16]
			if r, _, ok := vecReg(a[2]); ok {
				var v [64]byte
				copy(v[:], half)
				s.vec[r] = v
			} else {
				copy(s.bytes(in, s.addr(in, a[2]), 16, true), half)
				s.stores++
			}
		case "VMOVSD", "VMOVHPS": // stores of the low or high 64 bits
			x, _, _ := vecReg(a[0])
			o := 0
			if in.op == "VMOVHPS" {
				o = 8
			}
			copy(s.bytes(in, s.addr(in, a[1]), 8, true), s.vec[x][o:o+8])
			s.stores++
		case "VSHUFF32X4", "VSHUFF64X2": // the same on 128-bit chunks
			// Chunks 0, 1 of the result from the second source (a[2]),
			// chunks 2, 3 from the first (a[1]), picked by the immediate.
			im := s.imm(in, a[0])
			x, _, _ := vecReg(a[1])
			y, _, _ := vecReg(a[2])
			z, w, _ := vecReg(a[3])
			if w != 64 {
				s.fail(in, "only the zmm form is modelled")
			}
			src := [4][64]byte{s.vec[y], s.vec[y], s.vec[x], s.vec[x]}
			var r [64]byte
			for d := range 4 {
				sel := int(im>>(2*d)) & 3
				copy(r[16*d:16*d+16], src[d][16*sel:16*sel+16])
			}
			s.vec[z] = r
		case "SHRQ":
			s.gp[a[1]] >>= s.src64(in, a[0])
			s.zf = s.gp[a[1]] == 0
		case "DECQ":
			s.gp[a[0]]--
			s.zf = s.gp[a[0]] == 0
		case "CMPQ":
			x, y := int64(s.src64(in, a[0])), int64(s.src64(in, a[1]))
			s.zf, s.le = x == y, x <= y
		case "JZ":
			jump(s.zf)
		case "JNZ", "JNE":
			jump(!s.zf)
		case "JLE":
			jump(s.le)
		case "JMP":
			jump(true)
		case "VZEROUPPER":
			for i := range 16 {
				clear(s.vec[i][16:])
			}
		case "VPXORQ", "VXORPS":
			x, _, _ := vecReg(a[0])
			y, _, _ := vecReg(a[1])
			z, w, _ := vecReg(a[2])
			for i := range w {
				s.vec[z][i] = s.vec[x][i] ^ s.vec[y][i]
			}
			clear(s.vec[z][w:])
		case "VMOVUPD", "VMOVUPS":
			if len(a) == 3 { // a masked store
				es := 4
				if in.op == "VMOVUPD" {
					es = 8
				}
				r, w, _ := vecReg(a[0])
				m := s.k[kReg(in, s, a[1])]
				base := s.addr(in, a[2])
				for i := 0; i < w/es; i++ {
					if m>>i&1 != 0 {
						copy(s.bytes(in, base+uintptr(es*i), es, true), s.vec[r][es*i:es*i+es])
						s.stores++
					}
				}
			} else if r, w, ok := vecReg(a[1]); ok {
				copy(s.vec[r][:w], s.bytes(in, s.addr(in, a[0]), w, false))
				clear(s.vec[r][w:])
			} else {
				r, w, _ := vecReg(a[0])
				copy(s.bytes(in, s.addr(in, a[1]), w, true), s.vec[r][:w])
				s.stores++
			}
		case "VBROADCASTSD", "VBROADCASTSS":
			es := 8
			if in.op == "VBROADCASTSS" {
				es = 4
			}
			src := s.bytes(in, s.addr(in, a[0]), es, false)
			r, w, _ := vecReg(a[1])
			for i := 0; i < w; i += es {
				copy(s.vec[r][i:i+es], src)
			}
			clear(s.vec[r][w:])
		case "VFMADD231PD", "VSUBPD":
			x, _, _ := vecReg(a[0])
			y, _, _ := vecReg(a[1])
			z, w, _ := vecReg(a[2])
			for i := 0; i < w; i += 8 {
				p, q, r := lane64(&s.vec[x], i), lane64(&s.vec[y], i), lane64(&s.vec[z], i)
				if in.op == "VSUBPD" {
					*r = *q - *p
				} else {
					*r = math.FMA(*q, *p, *r)
				}
			}
			clear(s.vec[z][w:])
		case "VADDPS": // register or memory first operand
			var p [64]byte
			z, w, _ := vecReg(a[2])
			if x, _, ok := vecReg(a[0]); ok {
				p = s.vec[x]
			} else {
				copy(p[:w], s.bytes(in, s.addr(in, a[0]), w, false))
			}
			y, _, _ := vecReg(a[1])
			for i := 0; i < w; i += 4 {
				*lane32(&s.vec[z], i) = *lane32(&s.vec[y], i) + *lane32(&p, i)
			}
			clear(s.vec[z][w:])
		case "VFMADD231PS", "VSUBPS":
			x, _, _ := vecReg(a[0])
			y, _, _ := vecReg(a[1])
			z, w, _ := vecReg(a[2])
			for i := 0; i < w; i += 4 {
				p, q, r := lane32(&s.vec[x], i), lane32(&s.vec[y], i), lane32(&s.vec[z], i)
				if in.op == "VSUBPS" {
					*r = *q - *p
				} else {
					*r = FMA32(*q, *p, *r)
				}
			}
			clear(s.vec[z][w:])
		default:
			s.fail(in, "instruction not modelled")
		}
	}
}

func kReg(in asmInstr, s *cpuState, name string) int {
	if len(name) != 2 || name[0] != 'K' || name[1] < '1' || name[1] > '7' {
		s.fail(in, "bad opmask register %q", name)
	}
	return int(name[1] - '0')
}

func lane64(v *[64]byte, i int) *float64 { return (*float64)(unsafe.Pointer(&v[i])) }
func lane32(v *[64]byte, i int) *float32 { return (*float32)(unsafe.Pointer(&v[i])) }

// emulatedTile returns a tileFn that interprets f, for a tile of mr rows and
// nr queries.
func emulatedTile[T float](t *testing.T, f *asmFunc, mr, nr int) tileFn[T] {
	return func(a *T, lda int, p *T, d int, c *T, ldc int, nq, ng int) {
		emulate(t, f, mr, nr, a, lda, p, d, c, ldc, nq, ng, nil, 0)
	}
}

// emulatedBlkTile is emulatedTile for a blocked screening kernel.
func emulatedBlkTile(t *testing.T, f *asmFunc, mr, nr int) blkTileFn {
	return func(a *float32, lda int, p *float32, d int, c *float32, ldc int, nq, ng int, tot *float32, flags int) {
		emulate(t, f, mr, nr, a, lda, p, d, c, ldc, nq, ng, tot, flags)
	}
}

// emulate interprets one call of f; tot (mr·nr elements, or nil) are the
// totals of a blocked kernel.
func emulate[T float](t *testing.T, f *asmFunc, mr, nr int, a *T, lda int, p *T, d int, c *T, ldc int, nq, ng int, tot *T, flags int) {
	es := int(unsafe.Sizeof(*a))
	frame := make([]byte, f.frame+8)
	bytesAt := func(p *T, n int) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), n) }
	s := &cpuState{
		t: t, f: f,
		gp: map[string]uint64{"SP": uint64(uintptr(unsafe.Pointer(&frame[0])))},
		args: map[string]uint64{
			"a": uint64(uintptr(unsafe.Pointer(a))), "lda": uint64(lda),
			"p": uint64(uintptr(unsafe.Pointer(p))), "d": uint64(d),
			"c": uint64(uintptr(unsafe.Pointer(c))), "ldc": uint64(ldc),
			"nq": uint64(nq), "ng": uint64(ng),
			"t": uint64(uintptr(unsafe.Pointer(tot))), "flags": uint64(flags),
		},
		mem: []region{
			{name: "gallery rows", base: uintptr(unsafe.Pointer(a)), b: bytesAt(a, (mr-1)*lda+d*es)},
			{name: "packed queries", base: uintptr(unsafe.Pointer(p)), b: bytesAt(p, d*nr*es)},
			{name: "out", base: uintptr(unsafe.Pointer(c)), b: bytesAt(c, (nq-1)*ldc+ng*es), write: true, ldc: ldc, rowBytes: ng * es},
			{name: "frame", base: uintptr(unsafe.Pointer(&frame[0])), b: frame[:f.frame], write: true},
		},
	}
	if tot != nil {
		s.mem = append(s.mem, region{name: "totals", base: uintptr(unsafe.Pointer(tot)), b: bytesAt(tot, mr*nr*es), write: true})
	}
	for _, r := range []string{"AX", "BX", "CX", "DX", "SI", "DI", "BP", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"} {
		s.gp[r] = 0xdead0000 // garbage: the kernel must set what it uses
	}
	for i := range s.vec {
		for j := range s.vec[i] {
			s.vec[i][j] = 0xff // NaN lanes: the kernel must clear its accumulators
		}
	}
	s.run()
	if s.stores == 0 {
		t.Fatalf("%s stored nothing", f.name)
	}
}

var tileNameRE = regexp.MustCompile(`^(dot|sqDist|dotBlk)(64|32)(AVX2|AVX512)x(\d+)x(\d+)$`)

// scanNameRE names the row scans and the bucket placement, which the
// interpreter does not model (they are checked natively: TestScans,
// TestPlaceBuckets32 — on a CPU with AVX-512 for the latter).
var scanNameRE = regexp.MustCompile(`^((maxFinite|scan)32|convertNorm64|placeBuckets32)(AVX512|AVX2)$`)

// emulatedSets builds, from the functions in kernel_amd64.s, one simdSet per
// instruction set whose tile kernels run in the interpreter.
func emulatedSets(t *testing.T) map[string]*simdSet {
	funcs := parseAsm(t, "kernel_amd64.s")
	sets := map[string]*simdSet{}
	for name, f := range funcs {
		if scanNameRE.MatchString(name) {
			continue
		}
		m := tileNameRE.FindStringSubmatch(name)
		if m == nil {
			t.Fatalf("unexpected function %s", name)
		}
		set := sets[m[3]]
		if set == nil {
			set = &simdSet{}
			sets[m[3]] = set
		}
		mr, _ := strconv.Atoi(m[4])
		nv, _ := strconv.Atoi(m[5])
		vb := 32
		if m[3] == "AVX512" {
			vb = 64
		}
		add := func(tl any) {
			switch tl := tl.(type) {
			case *tiles[float64]:
				tl.width = vb / 8
				tl.shapes = grown(tl.shapes, nv)
				tl.shapes[nv-1] = tileShape[float64]{mr, nv, emulatedTile[float64](t, f, mr, nv*vb/8)}
			case *tiles[float32]:
				tl.width = vb / 4
				tl.shapes = grown(tl.shapes, nv)
				tl.shapes[nv-1] = tileShape[float32]{mr, nv, emulatedTile[float32](t, f, mr, nv*vb/4)}
			}
		}
		switch m[1] + m[2] {
		case "dot64":
			add(&set.dot64)
		case "sqDist64":
			add(&set.sqDist64)
		case "dot32":
			add(&set.dot32)
		case "dotBlk32":
			set.dotBlk32.width = vb / 4
			set.dotBlk32.shapes = grown(set.dotBlk32.shapes, nv)
			set.dotBlk32.shapes[nv-1] = blkShape{mr, nv, emulatedBlkTile(t, f, mr, nv*vb/4)}
		case "sqDist32":
			add(&set.sqDist32)
		}
	}
	return sets
}

func grown[S ~[]E, E any](s S, n int) S {
	for len(s) < n {
		var zero E
		s = append(s, zero)
	}
	return s
}

// The generated kernels, interpreted, reproduce the row definition through
// the real driver: this covers AVX-512 on CPUs without it.
func TestGeneratedKernelsInterpreted(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	sets := emulatedSets(t)
	if len(sets) != 2 {
		t.Fatalf("found instruction sets %v in kernel_amd64.s", sets)
	}
	for isa, set := range sets {
		for _, tl := range []int{len(set.dot64.shapes), len(set.sqDist64.shapes), len(set.dot32.shapes), len(set.sqDist32.shapes), len(set.dotBlk32.shapes)} {
			if tl == 0 {
				t.Fatalf("%s: missing kernels", isa)
			}
		}
		m := simdImpl("interpreted-"+isa, set)
		forCases(func(c *blockCase) {
			if c.d <= 33 || c.d == 769 && c.qn <= 2 && c.gn <= 9 {
				c.check(t, m)
			}
		})
	}
}

// The AVX-512 kernels may use AVX512F only (plus VEX AVX): that is all that
// the selection checks.
func TestAVX512NeedsOnlyF(t *testing.T) {
	src, err := os.ReadFile("kernel_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	n := 0
	for i, line := range lines {
		if m := textRE.FindStringSubmatch(line); m != nil {
			// PREFETCHT0 is annotated MMX+ (SSE's prefetches), which every
			// amd64 CPU has.
			req := strings.Replace(strings.TrimSpace(lines[i-1]), ", MMX+", "", 1)
			want := "// Requires: AVX, FMA3"
			if strings.Contains(m[1], "AVX512") {
				want = "// Requires: AVX, AVX512F"
			}
			if m[1] == "scan32AVX512" {
				// addSIMD installs it only with POPCNT.
				want = "// Requires: AVX, AVX512F, POPCNT"
			}
			if scanNameRE.MatchString(m[1]) && strings.HasSuffix(m[1], "AVX2") {
				// The AVX2 scans: any of what the avx2 implementation
				// is installed with (AVX2 and FMA3).
				for _, f := range strings.Split(strings.TrimPrefix(req, "// Requires: "), ", ") {
					if f != "AVX" && f != "AVX2" && f != "FMA3" {
						t.Errorf("%s needs %s: %q", m[1], f, req)
					}
				}
			} else if req != want {
				t.Errorf("%s: %q, want %q", m[1], req, want)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no kernels found")
	}
}
