// Command embedder is a stand-in embedding program for the command extractor
// tests. It reads the JSON Lines rows on stdin and writes deterministic
// vectors; flags make it misbehave in the ways the extractor must catch.
//
// The vector of a row with string value s (text, or the base name of an image
// path) and endpoint index i is
//
//	[count('a'), count('b'), count('c'), runes(s), i + 0.25, runes(s) / 3]
//
// and of a vector value v, [sum(v), len(v), i + 0.25].
//
// With -persistent it serves the persistent protocol instead: one request
// line {"batch": n, "rows": [...]} per batch, one reply line each, until
// stdin ends; the misbehaviour flags then apply to batch -at only.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type row struct {
	Index    int             `json:"index"`
	ID       string          `json:"id"`
	Side     string          `json:"side"`
	Modality string          `json:"modality"`
	Value    json.RawMessage `json:"value"`
}

var (
	format    = flag.String("format", "jsonl", "output format: jsonl, object or npy")
	dtype     = flag.String("dtype", "f8", "npy element type: f4 or f8")
	fail      = flag.Bool("fail", false, "write 100 stderr lines and exit 3")
	bigStderr = flag.Bool("big-stderr", false, "write 1 MiB to stderr and exit 3")
	rowsDelta = flag.Int("rows-delta", 0, "emit this many rows more (or fewer)")
	badLine   = flag.Int("malformed-line", 0, "replace this 1-based output line with garbage")
	nanRow    = flag.Int("nan-row", -1, "make column 1 of this row NaN (a JSON string in jsonl)")
	raggedRow = flag.Int("ragged-row", -1, "drop the last value of this row")
	swapIndex = flag.Bool("swap-index", false, "object format: report index+1")
	trailing  = flag.Bool("trailing", false, "npy format: write extra bytes after the array")
	sleep     = flag.Duration("sleep", 0, "sleep this long after reading stdin")
	spawn     = flag.Bool("spawn", false, "start a sleeping copy of itself that shares stdout, then sleep")
	pidFile   = flag.String("pidfile", "", "write the process ID to this file")
	record    = flag.String("record", "", "append the environment, cwd and stdin to this file")
	noRead    = flag.Bool("no-read", false, "exit at once without reading stdin or writing anything")

	persistent = flag.Bool("persistent", false, "serve the persistent request/reply protocol")
	at         = flag.Int("at", 0, "persistent: the batch the misbehaviour flags apply to")
	starts     = flag.String("starts", "", "persistent: append a line to this file at start")
	wrongBatch = flag.Bool("wrong-batch", false, "persistent: answer with the next batch number")
	errorReply = flag.Bool("error-reply", false, "persistent: answer with an error")
	wide       = flag.Bool("wide", false, "persistent: add a column to every row")
	bareNaN    = flag.Bool("bare-nan", false, "write -nan-row's NaN bare, as Python's json does")
	overflow   = flag.Bool("overflow", false, "write -nan-row's value as 1e400")
	blank      = flag.Bool("blank", false, "persistent: write blank lines before the reply")
	exitCode   = flag.Int("exit-code", 0, "persistent: exit status after stdin ends")
	linger     = flag.Duration("linger", 0, "persistent: sleep this long after stdin ends")
)

func main() {
	flag.Parse()
	if *persistent {
		servePersistent()
		return
	}
	if *noRead {
		return
	}
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			die(err)
		}
	}
	var rows []row
	var lines []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			die(fmt.Errorf("bad input line %d: %w", len(lines), err))
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		die(err)
	}
	if *record != "" {
		writeRecord(lines)
	}
	if *fail {
		for i := range 100 {
			fmt.Fprintf(os.Stderr, "noise line %d\n", i)
		}
		fmt.Fprintln(os.Stderr, "fatal: model exploded")
		os.Exit(3)
	}
	if *bigStderr {
		fmt.Fprint(os.Stderr, strings.Repeat("x", 1<<20))
		os.Exit(3)
	}
	if *spawn {
		spawnHelper()
		*sleep = time.Hour
	}
	if *sleep > 0 {
		time.Sleep(*sleep)
	}

	vecs := vectors(rows)

	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if *format == "npy" {
		writeNPY(out, vecs)
		if *trailing {
			out.WriteString("done\n")
		}
		return
	}
	for i, v := range vecs {
		line := jsonArray(v)
		if *format == "object" {
			index := rows[min(i, len(rows)-1)].Index
			if *swapIndex {
				index++
			}
			line = fmt.Sprintf(`{"index": %d, "embedding": %s}`, index, line)
		}
		if i+1 == *badLine {
			line = "[1, 2,"
		}
		fmt.Fprintln(out, line)
	}
}

// spawnHelper starts a sleeping copy of the embedder that shares stdout.
func spawnHelper() {
	child := exec.Command(os.Args[0], "-sleep", "1h", "-pidfile", *pidFile+".child")
	child.Stdin = strings.NewReader("")
	child.Stdout = os.Stdout // holds the pipe open unless it is killed too
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		die(err)
	}
}

// vectors embeds rows, applying -rows-delta, -ragged-row and -nan-row.
func vectors(rows []row) [][]float64 {
	vecs := make([][]float64, 0, len(rows))
	for _, r := range rows {
		vecs = append(vecs, vector(r))
	}
	n := max(len(vecs)+*rowsDelta, 0)
	for len(vecs) < n {
		vecs = append(vecs, vecs[len(vecs)-1])
	}
	vecs = vecs[:n]
	if *raggedRow >= 0 {
		vecs[*raggedRow] = vecs[*raggedRow][:len(vecs[*raggedRow])-1]
	}
	if *nanRow >= 0 {
		vecs[*nanRow][1] = math.NaN()
	}
	return vecs
}

// servePersistent answers one request line per batch until stdin ends.
func servePersistent() {
	if *starts != "" {
		appendLine(*starts, strconv.Itoa(os.Getpid()))
	}
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			die(err)
		}
	}
	fmt.Fprintln(os.Stderr, "embedder: persistent worker ready")
	out := bufio.NewWriter(os.Stdout)
	var lines []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var req struct {
			Batch *int  `json:"batch"`
			Rows  []row `json:"rows"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.Batch == nil || req.Rows == nil {
			die(fmt.Errorf("bad request line %d: %v: %s", len(lines), err, sc.Text()))
		}
		n := *req.Batch
		fmt.Fprintf(os.Stderr, "embedder: serving batch %d (%d rows)\n", n, len(req.Rows))
		if n != *at {
			writeReply(out, n, vectorsPlain(req.Rows))
			continue
		}
		if *fail {
			for i := range 100 {
				fmt.Fprintf(os.Stderr, "noise line %d\n", i)
			}
			fmt.Fprintf(os.Stderr, "fatal: model exploded at batch %d\n", n)
			os.Exit(3)
		}
		if *spawn {
			spawnHelper()
			*sleep = time.Hour
		}
		if *sleep > 0 {
			time.Sleep(*sleep)
		}
		if *blank {
			out.WriteString("\n  \r\n")
		}
		switch {
		case *errorReply:
			fmt.Fprintf(out, `{"batch": %d, "error": "CUDA out of memory at batch %d"}`+"\n", n, n)
			out.Flush()
			continue
		case *badLine > 0:
			fmt.Fprintf(out, `{"batch": %d, "embeddings": [[1, 2,`+"\n", n)
			out.Flush()
			continue
		}
		vecs := vectors(req.Rows)
		if *wide {
			for i := range vecs {
				vecs[i] = append(vecs[i], 1)
			}
		}
		if *wrongBatch {
			n++
		}
		writeReply(out, n, vecs)
	}
	if err := sc.Err(); err != nil {
		die(err)
	}
	if *record != "" {
		writeRecord(lines)
	}
	fmt.Fprintln(os.Stderr, "embedder: stdin closed, exiting")
	if *linger > 0 {
		time.Sleep(*linger)
	}
	os.Exit(*exitCode)
}

func vectorsPlain(rows []row) [][]float64 {
	vecs := make([][]float64, len(rows))
	for i, r := range rows {
		vecs[i] = vector(r)
	}
	return vecs
}

func writeReply(out *bufio.Writer, n int, vecs [][]float64) {
	parts := make([]string, len(vecs))
	for i, v := range vecs {
		parts[i] = jsonArray(v)
	}
	fmt.Fprintf(out, `{"batch": %d, "embeddings": [%s]}`+"\n", n, strings.Join(parts, ", "))
	if err := out.Flush(); err != nil {
		die(err)
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		die(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		die(err)
	}
}

func vector(r row) []float64 {
	base := float64(r.Index) + 0.25
	var s string
	if err := json.Unmarshal(r.Value, &s); err != nil {
		var v []float64
		if err := json.Unmarshal(r.Value, &v); err != nil {
			die(fmt.Errorf("row %d: value is neither a string nor numbers", r.Index))
		}
		sum := 0.0
		for _, x := range v {
			sum += x
		}
		return []float64{sum, float64(len(v)), base}
	}
	if r.Modality == "image" {
		s = filepath.Base(s)
	}
	n := float64(utf8.RuneCountInString(s))
	return []float64{
		float64(strings.Count(s, "a")), float64(strings.Count(s, "b")), float64(strings.Count(s, "c")),
		n, base, n / 3,
	}
}

// jsonArray writes NaN as the string "NaN", the way some hand-written
// serialisers do; the extractor must reject it as malformed.
func jsonArray(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		switch {
		case math.IsNaN(x) && *bareNaN:
			parts[i] = "NaN"
		case math.IsNaN(x) && *overflow:
			parts[i] = "1e400"
		case math.IsNaN(x):
			parts[i] = `"NaN"`
		default:
			parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// writeNPY writes a format 1.0 C-order little-endian array, as np.save does.
func writeNPY(w *bufio.Writer, vecs [][]float64) {
	cols := 0
	if len(vecs) > 0 {
		cols = len(vecs[0])
	}
	header := fmt.Sprintf("{'descr': '<%s', 'fortran_order': False, 'shape': (%d, %d), }", *dtype, len(vecs), cols)
	pad := 64 - (10+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"
	w.WriteString("\x93NUMPY\x01\x00")
	binary.Write(w, binary.LittleEndian, uint16(len(header)))
	w.WriteString(header)
	for _, v := range vecs {
		for _, x := range v[:cols] {
			if *dtype == "f4" {
				binary.Write(w, binary.LittleEndian, float32(x))
			} else {
				binary.Write(w, binary.LittleEndian, x)
			}
		}
	}
}

func writeRecord(lines []string) {
	cwd, _ := os.Getwd()
	env := map[string]string{} // only the variables that are set
	for _, k := range []string{"VERTEBRAE_SIDE", "VERTEBRAE_BRANCH", "VERTEBRAE_MODALITY", "EMBEDDER_TOKEN"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	rec := map[string]any{"args": os.Args[1:], "cwd": cwd, "stdin": lines, "env": env}
	b, err := json.Marshal(rec)
	if err != nil {
		die(err)
	}
	f, err := os.OpenFile(*record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		die(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		die(err)
	}
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "embedder:", err)
	os.Exit(1)
}
