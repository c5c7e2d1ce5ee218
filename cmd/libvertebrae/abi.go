package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/capi"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/results"
)

// calls holds the cancel function of every live call handle, and results
// the benchmarks taken from finished evaluations (vt_result_take); both
// draw their handles from one counter.
var calls = struct {
	sync.Mutex
	next    uint64
	m       map[uint64]*call
	results map[uint64]*results.Benchmark
}{m: map[uint64]*call{}, results: map[uint64]*results.Benchmark{}}

type call struct {
	ctx    context.Context
	cancel context.CancelFunc
	bench  *results.Benchmark // of a finished vt_evaluate
}

//export vt_call_new
func vt_call_new() C.uint64_t {
	ctx, cancel := context.WithCancel(context.Background())
	calls.Lock()
	defer calls.Unlock()
	calls.next++
	calls.m[calls.next] = &call{ctx: ctx, cancel: cancel}
	return C.uint64_t(calls.next)
}

//export vt_call_cancel
func vt_call_cancel(h C.uint64_t) {
	calls.Lock()
	c, ok := calls.m[uint64(h)]
	calls.Unlock()
	if ok {
		c.cancel()
	}
}

//export vt_call_free
func vt_call_free(h C.uint64_t) {
	calls.Lock()
	c, ok := calls.m[uint64(h)]
	delete(calls.m, uint64(h))
	calls.Unlock()
	if ok {
		c.cancel()
	}
}

//export vt_result_take
func vt_result_take(h C.uint64_t) C.uint64_t {
	calls.Lock()
	defer calls.Unlock()
	c, ok := calls.m[uint64(h)]
	if !ok || c.bench == nil {
		return 0
	}
	calls.next++
	calls.results[calls.next] = c.bench
	c.bench = nil
	return C.uint64_t(calls.next)
}

//export vt_result_free
func vt_result_free(r C.uint64_t) {
	calls.Lock()
	delete(calls.results, uint64(r))
	calls.Unlock()
}

// callOf is the handle's call; handle 0 is a call nobody cancels.
func callOf(h C.uint64_t) (*call, error) {
	if h == 0 {
		return &call{ctx: context.Background()}, nil
	}
	calls.Lock()
	defer calls.Unlock()
	c, ok := calls.m[uint64(h)]
	if !ok {
		return nil, &capi.UsageError{Msg: fmt.Sprintf("unknown call handle %d (freed, or not from vt_call_new)", uint64(h))}
	}
	return c, nil
}

// run executes fn under the handle's context and reports its result.
func run(h C.uint64_t, out **C.char, fn func(ctx context.Context, c *call) ([]byte, error)) (code C.int32_t) {
	c, err := callOf(h)
	if err != nil {
		*out = C.CString(err.Error())
		return C.int32_t(capi.Usage)
	}
	ctx := c.ctx
	defer func() {
		if p := recover(); p != nil {
			*out = C.CString(fmt.Sprintf("internal error (a defect, please report it): %v\n%s", p, debug.Stack()))
			code = C.int32_t(capi.Internal)
		}
	}()
	data, err := fn(ctx, c)
	if err != nil {
		*out = C.CString(capi.Message(ctx, err))
		return C.int32_t(capi.Classify(ctx, err))
	}
	*out = cBytes(data)
	return C.int32_t(capi.OK)
}

// cBytes copies data into a NUL-terminated C string.
func cBytes(data []byte) *C.char {
	p := (*C.char)(C.malloc(C.size_t(len(data) + 1)))
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), len(data)+1)
	copy(b, data)
	b[len(data)] = 0
	return p
}

func array(data unsafe.Pointer, rows, cols, stride C.int64_t, dtype C.int32_t) *capi.Array {
	return &capi.Array{Data: data, Rows: int64(rows), Cols: int64(cols), RowStride: int64(stride), DType: capi.DType(dtype)}
}

//export vt_evaluate
func vt_evaluate(h C.uint64_t, request *C.char,
	qData unsafe.Pointer, qRows, qCols, qStride C.int64_t, qDType C.int32_t,
	gData unsafe.Pointer, gRows, gCols, gStride C.int64_t, gDType C.int32_t,
	relData *C.double, relRows, relCols C.int64_t,
	out **C.char) C.int32_t {
	return run(h, out, func(ctx context.Context, c *call) ([]byte, error) {
		req, err := capi.ParseEvaluateRequest([]byte(C.GoString(request)))
		if err != nil {
			return nil, err
		}
		in := capi.Inputs{Queries: array(qData, qRows, qCols, qStride, qDType)}
		if gData != nil || gRows > 0 {
			in.Gallery = array(gData, gRows, gCols, gStride, gDType)
		}
		if relData != nil {
			in.Relevance = array(unsafe.Pointer(relData), relRows, relCols, 0, C.int32_t(capi.Float64))
		}
		bench, data, err := capi.EvaluateBenchmark(ctx, req, in)
		if err == nil && h != 0 {
			calls.Lock()
			c.bench = bench // for vt_result_take
			calls.Unlock()
		}
		return data, err
	})
}

//export vt_compare
func vt_compare(h C.uint64_t, request *C.char, out **C.char) C.int32_t {
	return run(h, out, func(ctx context.Context, _ *call) ([]byte, error) {
		req, err := capi.ParseCompareRequest([]byte(C.GoString(request)))
		if err != nil {
			return nil, err
		}
		return capi.Compare(ctx, req)
	})
}

//export vt_render
func vt_render(h C.uint64_t, request *C.char, out **C.char) C.int32_t {
	return run(h, out, func(ctx context.Context, _ *call) ([]byte, error) {
		req, err := capi.ParseRenderRequest([]byte(C.GoString(request)))
		if err != nil {
			return nil, err
		}
		var held *results.Benchmark
		if req.Result != 0 {
			calls.Lock()
			held = calls.results[req.Result]
			calls.Unlock()
			if held == nil {
				return nil, &capi.UsageError{Msg: fmt.Sprintf("render: unknown result handle %d (freed, or not from vt_result_take)", req.Result)}
			}
		}
		return capi.Render(ctx, req, held)
	})
}

//export vt_free
func vt_free(p *C.char) { C.free(unsafe.Pointer(p)) }

//export vt_version
func vt_version() *C.char { return C.CString(version.Version) }
