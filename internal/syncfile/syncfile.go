package syncfile

import (
	"context"
	"os"
)

// Flush starts and waits for the write-back of f's data, a few megabytes
// at a time, and returns ctx's error as soon as ctx is done. It does not
// make f durable by itself (metadata and the device cache are left to
// f.Sync, which must follow): where the platform has no ranged write-back,
// or it fails, Flush does nothing and the Sync does all the work.
func Flush(ctx context.Context, f *os.File) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := flush(ctx, f); err != nil {
		return err
	}
	return ctx.Err()
}

// Sync is Flush followed by f.Sync: f's data and metadata are durable when
// it returns nil; a done ctx ends it early with ctx's error.
func Sync(ctx context.Context, f *os.File) error {
	if err := Flush(ctx, f); err != nil {
		return err
	}
	return f.Sync()
}
