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

	"github.com/vertebrae-eval/vertebrae/internal/capi"
	"github.com/vertebrae-eval/vertebrae/internal/version"
)

// calls holds the cancel function of every live handle.
var calls = struct {
	sync.Mutex
	next uint64
	m    map[uint64]call
}{m: map[uint64]call{}}

type call struct {
	ctx    context.Context
	cancel context.CancelFunc
}

//export vt_call_new
func vt_call_new() C.uint64_t {
	ctx, cancel := context.WithCancel(context.Background())
	calls.Lock()
	defer calls.Unlock()
	calls.next++
	calls.m[calls.next] = call{ctx, cancel}
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

// contextOf is the handle's context; handle 0 is a call nobody cancels.
func contextOf(h C.uint64_t) (context.Context, error) {
	if h == 0 {
		return context.Background(), nil
	}
	calls.Lock()
	defer calls.Unlock()
	c, ok := calls.m[uint64(h)]
	if !ok {
		return nil, &capi.UsageError{Msg: fmt.Sprintf("unknown call handle %d (freed, or not from vt_call_new)", uint64(h))}
	}
	return c.ctx, nil
}

// run executes fn under the handle's context and reports its result.
func run(h C.uint64_t, out **C.char, fn func(ctx context.Context) ([]byte, error)) (code C.int32_t) {
	ctx, err := contextOf(h)
	if err != nil {
		*out = C.CString(err.Error())
		return C.int32_t(capi.Usage)
	}
	defer func() {
		if p := recover(); p != nil {
			*out = C.CString(fmt.Sprintf("internal error (a defect, please report it): %v\n%s", p, debug.Stack()))
			code = C.int32_t(capi.Internal)
		}
	}()
	data, err := fn(ctx)
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
	return run(h, out, func(ctx context.Context) ([]byte, error) {
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
		return capi.Evaluate(ctx, req, in)
	})
}

//export vt_compare
func vt_compare(h C.uint64_t, request *C.char, out **C.char) C.int32_t {
	return run(h, out, func(ctx context.Context) ([]byte, error) {
		req, err := capi.ParseCompareRequest([]byte(C.GoString(request)))
		if err != nil {
			return nil, err
		}
		return capi.Compare(ctx, req)
	})
}

//export vt_render
func vt_render(h C.uint64_t, request *C.char, out **C.char) C.int32_t {
	return run(h, out, func(ctx context.Context) ([]byte, error) {
		req, err := capi.ParseRenderRequest([]byte(C.GoString(request)))
		if err != nil {
			return nil, err
		}
		return capi.Render(ctx, req)
	})
}

//export vt_free
func vt_free(p *C.char) { C.free(unsafe.Pointer(p)) }

//export vt_version
func vt_version() *C.char { return C.CString(version.Version) }
