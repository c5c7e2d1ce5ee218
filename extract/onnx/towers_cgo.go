//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"image"
	"runtime"
	"sync"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
	"github.com/vertebrae-eval/vertebrae/extract/onnx/tokenize"
)

// textTower is a tokenizer plus a text model: texts → float32 rows.
type textTower struct {
	sess       *Session
	tok        *tokenize.Tokenizer
	opts       tokenize.Options
	output     TensorInfo
	pooling    string
	normalize  bool
	batch      int
	idsInput   string
	maskInput  string // "" when the model does not declare one
	posInput   string
	typesInput string
	sparse     bool // inputs indices [n_tokens, 2] and values [n_tokens] (sparse.go)
}

// newTextTower wires a tokenizer to a text model. maxLen is the resolved
// text length; explicitLen says it came from the max_length option, which a
// model with a fixed sequence length must then agree with.
func newTextTower(sess *Session, tok *tokenize.Tokenizer, maxLen int, explicitLen bool, padding, output, pooling string, normalize bool, batch int, defaults ...string) (*textTower, error) {
	t := &textTower{sess: sess, tok: tok, pooling: pooling, normalize: normalize, batch: batch}
	t.opts = tokenize.Options{MaxLength: maxLen, Padding: tokenize.PadMaxLength, PadID: tok.PadID()}
	if padding == PadLongest {
		t.opts.Padding = tokenize.PadLongest
	}
	if isSparseInput(sess.Inputs()) {
		return t.sparseTower(output, pooling, defaults...)
	}
	for _, in := range sess.Inputs() {
		if in.Type != "int64" && in.Type != "int32" {
			return nil, fmt.Errorf("text model input %s is not an integer tensor", in)
		}
		switch {
		case in.Name == "attention_mask":
			t.maskInput = in.Name
		case in.Name == "position_ids":
			t.posInput = in.Name
		case in.Name == "token_type_ids":
			t.typesInput = in.Name
		case in.Name == "input_ids" || (t.idsInput == "" && len(sess.Inputs()) == 1):
			t.idsInput = in.Name
		default:
			return nil, fmt.Errorf("text model input %s is not one vertebrae can feed (input_ids, attention_mask, position_ids, token_type_ids)", in)
		}
	}
	if t.idsInput == "" {
		return nil, fmt.Errorf("text model has no input_ids input (inputs: %s)", names(sess.Inputs()))
	}
	// Static exports (common for OpenCLIP) fix the batch and/or the length.
	ids, _ := findInfo(sess.Inputs(), t.idsInput)
	if len(ids.Shape) != 2 {
		return nil, fmt.Errorf("text model input %s is not 2-D [batch, sequence]", ids)
	}
	switch b := ids.Shape[0]; {
	case b == 1:
		t.batch = 1
	case b > 1:
		return nil, fmt.Errorf("text model input %s has a fixed batch of %d; only 1 or dynamic is supported", ids, b)
	}
	if l := int(ids.Shape[1]); l > 0 {
		if t.opts.Padding == tokenize.PadLongest {
			return nil, fmt.Errorf("text model input %s has a fixed length of %d tokens; use padding max_length", ids, l)
		}
		if explicitLen && maxLen != l {
			return nil, fmt.Errorf("max_length is %d but text model input %s takes exactly %d tokens", maxLen, ids, l)
		}
		t.opts.MaxLength = l
	}
	out, err := selectOutput(sess.Outputs(), output, pooling, defaults...)
	if err != nil {
		return nil, fmt.Errorf("text model: %w", err)
	}
	t.output = out
	return t, nil
}

// selectOutput picks the output (see pickOutput) and checks its rank:
// [batch, hidden], or [batch, seq, hidden] only with pooling (SPEC §9.4).
func selectOutput(outputs []TensorInfo, configured, pooling string, defaults ...string) (TensorInfo, error) {
	out, err := pickOutput(outputs, configured, defaults...)
	if err != nil {
		return TensorInfo{}, err
	}
	switch len(out.Shape) {
	case 2:
		return out, nil
	case 3:
		if pooling == PoolNone {
			return TensorInfo{}, fmt.Errorf("output %s is 3-D; set pooling (cls or mean) to reduce it", out)
		}
		return out, nil
	}
	return TensorInfo{}, fmt.Errorf("output %s must be 2-D [batch, dim] or 3-D [batch, seq, dim]", out)
}

// rowOf maps a position in an encoder call to its endpoint row, for
// messages: a modulo shard's batch gathers rows N apart (extract.Batch.Row).
type rowOf func(i int) int

func (t *textTower) encode(ctx context.Context, texts []string, row rowOf) ([]float32, int, error) {
	var rows []float32
	width := -1
	for lo := 0; lo < len(texts); lo += t.batch {
		hi := min(lo+t.batch, len(texts))
		enc, err := t.tok.Encode(ctx, texts[lo:hi], t.opts)
		if err != nil {
			return nil, 0, err
		}
		if t.sparse {
			data, w, err := t.runSparse(ctx, enc)
			if err != nil {
				return nil, 0, fmt.Errorf("text rows %d-%d: %w", row(lo), row(hi-1), err)
			}
			if width >= 0 && w != width {
				return nil, 0, fmt.Errorf("text rows %d-%d: output width %d differs from earlier rows (%d)", row(lo), row(hi-1), w, width)
			}
			width = w
			rows = append(rows, data...)
			continue
		}
		shape := []int64{int64(enc.Rows), int64(enc.Len)}
		feeds := []Feed{{Name: t.idsInput, Shape: shape, Int64: enc.IDs}}
		if t.maskInput != "" {
			feeds = append(feeds, Feed{Name: t.maskInput, Shape: shape, Int64: enc.AttentionMask})
		}
		if t.posInput != "" {
			pos := make([]int64, len(enc.IDs))
			for i := range pos {
				pos[i] = int64(i % enc.Len)
			}
			feeds = append(feeds, Feed{Name: t.posInput, Shape: shape, Int64: pos})
		}
		if t.typesInput != "" {
			types := enc.TypeIDs
			if types == nil {
				types = make([]int64, len(enc.IDs))
			}
			feeds = append(feeds, Feed{Name: t.typesInput, Shape: shape, Int64: types})
		}
		out, err := t.sess.Run(ctx, feeds, t.output.Name)
		if err != nil {
			return nil, 0, fmt.Errorf("text rows %d-%d: %w", row(lo), row(hi-1), err)
		}
		data, w, err := reduce(out, enc.Rows, t.pooling, enc.AttentionMask, enc.Len)
		if err != nil {
			return nil, 0, fmt.Errorf("text rows %d-%d: %w", row(lo), row(hi-1), err)
		}
		if width >= 0 && w != width {
			return nil, 0, fmt.Errorf("text rows %d-%d: output width %d differs from earlier rows (%d)", row(lo), row(hi-1), w, width)
		}
		width = w
		rows = append(rows, data...)
	}
	if t.normalize && width > 0 {
		normalizeRows(rows, width)
	}
	return rows, max(width, 0), nil
}

// reduce turns one run's output into [rows, width], pooling 3-D outputs.
// mask (rows×seq) restricts mean pooling when its length matches.
func reduce(out Output, rows int, pooling string, mask []int64, seq int) ([]float32, int, error) {
	switch len(out.Shape) {
	case 2:
		if int(out.Shape[0]) != rows {
			return nil, 0, fmt.Errorf("output %s has %d rows for %d inputs", out.Name, out.Shape[0], rows)
		}
		return out.Data, int(out.Shape[1]), nil
	case 3:
		if int(out.Shape[0]) != rows {
			return nil, 0, fmt.Errorf("output %s has %d rows for %d inputs", out.Name, out.Shape[0], rows)
		}
		if pooling == PoolNone {
			return nil, 0, fmt.Errorf("output %s is 3-D %v; set pooling (cls or mean)", out.Name, out.Shape)
		}
		s, h := int(out.Shape[1]), int(out.Shape[2])
		if s != seq || len(mask) != rows*s {
			mask = nil // not token-aligned (an image model's patches): plain mean
		}
		data, err := pool(out.Data, rows, s, h, pooling, mask)
		return data, h, err
	}
	return nil, 0, fmt.Errorf("output %s has shape %v; want 2-D or 3-D", out.Name, out.Shape)
}

// imageTower is a preprocessor plus an image model: image files → rows.
type imageTower struct {
	sess       *Session
	prep       imageprep.Config
	input      TensorInfo
	output     TensorInfo
	pooling    string
	normalize  bool
	batch      int
	fixedBatch bool // the model's batch dimension is fixed (1): run one image at a time
}

func newImageTower(sess *Session, prep imageprep.Config, output, pooling string, normalize bool, batch int, defaults ...string) (*imageTower, error) {
	t := &imageTower{sess: sess, prep: prep, pooling: pooling, normalize: normalize, batch: batch}
	ins := sess.Inputs()
	if in, ok := findInfo(ins, "pixel_values"); ok {
		t.input = in
	} else if len(ins) == 1 {
		t.input = ins[0]
	} else {
		return nil, fmt.Errorf("image model has no pixel_values input (inputs: %s)", names(ins))
	}
	if len(ins) != 1 {
		return nil, fmt.Errorf("image model has inputs other than %s (inputs: %s)", t.input.Name, names(ins))
	}
	if t.input.Type != "float32" && t.input.Type != "float16" {
		return nil, fmt.Errorf("image model input %s is not a float tensor", t.input)
	}
	if len(t.input.Shape) != 4 {
		return nil, fmt.Errorf("image model input %s is not 4-D NCHW", t.input)
	}
	if c := t.input.Shape[1]; c >= 0 && int(c) != prep.Channels() {
		return nil, fmt.Errorf("image model input %s takes %d channels; the preprocessor produces %d", t.input, c, prep.Channels())
	}
	if h, w, ok := prep.FixedSize(); ok {
		if (t.input.Shape[2] >= 0 && int(t.input.Shape[2]) != h) || (t.input.Shape[3] >= 0 && int(t.input.Shape[3]) != w) {
			return nil, fmt.Errorf("image model input %s does not match the preprocessor's %dx%d output", t.input, h, w)
		}
	}
	if b := t.input.Shape[0]; b >= 0 {
		if b != 1 {
			return nil, fmt.Errorf("image model input %s has a fixed batch of %d; only 1 or dynamic is supported", t.input, b)
		}
		t.fixedBatch = true
	}
	out, err := selectOutput(sess.Outputs(), output, pooling, defaults...)
	if err != nil {
		return nil, fmt.Errorf("image model: %w", err)
	}
	t.output = out
	return t, nil
}

func (t *imageTower) encode(ctx context.Context, paths []string, row rowOf) ([]float32, int, error) {
	return t.encodeFrom(ctx, len(paths), func(i int) (image.Image, string, error) {
		img, err := imageprep.DecodeFile(paths[i])
		return img, paths[i], err
	}, row)
}

// imageSource returns row i's image and a description for errors (its
// path, or "" for an image decoded by the caller).
type imageSource func(i int) (image.Image, string, error)

func (t *imageTower) encodeFrom(ctx context.Context, n int, src imageSource, row rowOf) ([]float32, int, error) {
	batch := t.batch
	if t.fixedBatch {
		batch = 1
	}
	var rows []float32
	width := -1
	c := t.prep.Channels()
	// Images are decoded and preprocessed in parallel a chunk at a time;
	// each chunk then runs as ONNX batches of consecutive images whose
	// tensors have the same size.
	chunk := max(batch, runtime.GOMAXPROCS(0))
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		tensors, err := t.preprocess(ctx, hi-lo, func(i int) (image.Image, string, error) { return src(lo + i) }, func(i int) int { return row(lo + i) })
		if err != nil {
			return nil, 0, err
		}
		for s := 0; s < len(tensors); {
			e := s + 1
			for e < len(tensors) && e-s < batch && tensors[e].h == tensors[s].h && tensors[e].w == tensors[s].w {
				e++
			}
			pix := make([]float32, 0, (e-s)*len(tensors[s].data))
			for _, x := range tensors[s:e] {
				pix = append(pix, x.data...)
			}
			a, b := row(lo+s), row(lo+e-1)
			shape := []int64{int64(e - s), int64(c), int64(tensors[s].h), int64(tensors[s].w)}
			out, err := t.sess.Run(ctx, []Feed{{Name: t.input.Name, Shape: shape, Float32: pix}}, t.output.Name)
			if err != nil {
				return nil, 0, fmt.Errorf("image rows %d-%d: %w", a, b, err)
			}
			data, w, err := reduce(out, e-s, t.pooling, nil, 0)
			if err != nil {
				return nil, 0, fmt.Errorf("image rows %d-%d: %w", a, b, err)
			}
			if width >= 0 && w != width {
				return nil, 0, fmt.Errorf("image rows %d-%d: output width %d differs from earlier rows (%d)", a, b, w, width)
			}
			width = w
			rows = append(rows, data...)
			s = e
		}
	}
	if t.normalize && width > 0 {
		normalizeRows(rows, width)
	}
	return rows, max(width, 0), nil
}

type imageTensor struct {
	data []float32
	h, w int
}

// preprocess decodes and preprocesses images on up to GOMAXPROCS
// goroutines. Of several failures the lowest row is reported, so the error
// does not depend on scheduling.
func (t *imageTower) preprocess(ctx context.Context, n int, src imageSource, row rowOf) ([]imageTensor, error) {
	out := make([]imageTensor, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				img, what, err := src(i)
				if err != nil {
					errs[i] = fmt.Errorf("image row %d: %w", row(i), err)
					continue
				}
				data, h, w, err := t.prep.Tensor(img)
				if err != nil {
					if what != "" {
						errs[i] = fmt.Errorf("image row %d (%s): %w", row(i), what, err)
					} else {
						errs[i] = fmt.Errorf("image row %d: %w", row(i), err)
					}
					continue
				}
				out[i] = imageTensor{data, h, w}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
