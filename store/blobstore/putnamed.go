package blobstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

	"github.com/vertebrae-eval/vertebrae/store"
)

// TempPrefix starts the name of the temporary object a PutNamed uploads
// before it knows the final name. Names with a component that starts with
// it are reserved.
const TempPrefix = ".vertebrae-put-"

// Server-side copies on S3: CopyObject takes objects up to 5 GiB; larger
// ones are copied with UploadPartCopy in parts (at most 10,000 of them, so
// 512 MiB parts reach 5 TiB, S3's object limit). GCS rewrites any size in
// one call.
const (
	s3SingleCopyLimit = 5 << 30
	s3CopyPartBytes   = 512 << 20
	copyConcurrency   = 8 // part copies in flight
)

// staleTempAge is how old a temporary object must be before a later
// PutNamed under the same prefix deletes it as left by a killed process.
// A live PutNamed's temporary object exists only between the end of its
// upload and the end of its server-side copy.
const staleTempAge = 24 * time.Hour

func copyLimit(scheme string) int64 {
	if scheme == "s3" {
		return s3SingleCopyLimit
	}
	return math.MaxInt64
}

var _ store.LateNamer = (*Store)(nil)

// PutNamed implements store.LateNamer with one upload: the bytes go to a
// temporary object under prefix (committed atomically, as Put commits),
// which the server then copies to prefix + "/" + name() (CopyObject, or a
// multipart copy beyond 5 GiB, on S3; a rewrite on GCS) before the
// temporary object is deleted. So the caller streams its data once, and
// the final object appears whole or not at all. A failure deletes the
// temporary object; a process killed between upload and copy leaves it,
// and a PutNamed under the same prefix a day later deletes it (or a bucket
// lifecycle rule on the prefix's TempPrefix objects).
func (s *Store) PutNamed(ctx context.Context, prefix string, r io.Reader, size int64, name func() (string, error)) error {
	if err := store.ValidateName(prefix); err != nil {
		return fmt.Errorf("%s: %w", s.desc, err)
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("%s: put %s/…: %w", s.desc, prefix, err)
	}
	tmp := prefix + "/" + TempPrefix + hex.EncodeToString(nonce[:])
	cr := &countingReader{r: r}
	if err := s.put(ctx, tmp, cr, size); err != nil {
		return err
	}
	// The temporary object goes whatever happens next, even when ctx is
	// cancelled; a bounded context, so a stalled server cannot hold it up.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = s.bucket.Delete(dctx, tmp)
	}()
	base, err := name()
	if err != nil {
		return fmt.Errorf("%s: put %s/…: %w", s.desc, prefix, err)
	}
	final := prefix + "/" + base
	if base == "" || strings.Contains(base, "/") || strings.HasPrefix(base, TempPrefix) {
		return fmt.Errorf("%s: put %s: the name must be one component, not starting with %s", s.desc, final, TempPrefix)
	}
	if err := store.ValidateName(final); err != nil {
		return fmt.Errorf("%s: %w", s.desc, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: put %s: %w", s.desc, final, err)
	}
	if cr.n <= s.singleCopyLimit {
		err = s.bucket.Copy(ctx, final, tmp, nil)
	} else {
		err = s.copyParts(ctx, final, tmp, cr.n)
	}
	if err != nil {
		return s.wrap(ctx, "copy "+tmp+" to", final, err)
	}
	s.deleteStaleTemps(ctx, prefix)
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// copyParts copies an n-byte S3 object in parts of s.copyPartBytes with
// UploadPartCopy; CompleteMultipartUpload makes it visible at once, and a
// failure aborts the upload, deleting its parts.
func (s *Store) copyParts(ctx context.Context, dst, src string, n int64) error {
	var client *s3.Client
	if !s.bucket.As(&client) {
		return fmt.Errorf("an object of %d bytes is copied in parts, which needs S3", n)
	}
	key := func(name string) string {
		if s.prefix == "" {
			return name
		}
		return s.prefix + "/" + name
	}
	bucket, dstKey := aws.String(s.bucketName), aws.String(key(dst))
	in := &s3.CreateMultipartUploadInput{Bucket: bucket, Key: dstKey, ContentType: aws.String(contentType(dst))}
	if s.sse.EncryptionType != "" {
		in.ServerSideEncryption = s.sse.EncryptionType
	}
	if s.sse.KMSEncryptionID != "" {
		in.SSEKMSKeyId = aws.String(s.sse.KMSEncryptionID)
	}
	up, err := client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return err
	}
	abort := func(err error) error {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_, _ = client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: bucket, Key: dstKey, UploadId: up.UploadId})
		return err
	}
	source := aws.String(url.QueryEscape(s.bucketName + "/" + key(src)))
	parts := make([]s3types.CompletedPart, (n+s.copyPartBytes-1)/s.copyPartBytes)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(copyConcurrency) // the server copies; the parts only wait on it
	for i := range parts {
		num, off := int32(i+1), int64(i)*s.copyPartBytes
		end := min(off+s.copyPartBytes, n) - 1
		g.Go(func() error {
			out, err := client.UploadPartCopy(gctx, &s3.UploadPartCopyInput{
				Bucket: bucket, Key: dstKey, UploadId: up.UploadId, PartNumber: aws.Int32(num),
				CopySource: source, CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, end)),
			})
			if err != nil {
				return err
			}
			if out.CopyPartResult == nil {
				return fmt.Errorf("part %d of the copy: no result", num)
			}
			parts[i] = s3types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: aws.Int32(num)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return abort(err)
	}
	if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: bucket, Key: dstKey, UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return abort(err)
	}
	return nil
}

// deleteStaleTemps deletes, best effort, the temporary objects under prefix
// older than staleTempAge (left by killed processes).
func (s *Store) deleteStaleTemps(ctx context.Context, prefix string) {
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix + "/" + TempPrefix})
	cutoff := time.Now().Add(-s.staleTempAge)
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			return // io.EOF, or a listing error: nothing to clean now
		}
		if !obj.IsDir && obj.ModTime.Before(cutoff) {
			_ = s.bucket.Delete(ctx, obj.Key)
		}
	}
}
