// Package blobstore is the object-store backend for s3:// and gs:// URIs
// under the artifact layer (SPEC §10.5, opened through store/location),
// through gocloud.dev/blob with its s3blob and gcsblob drivers.
//
// URIs are gocloud's: s3://bucket/prefix?query and gs://bucket/prefix?query.
// The path is a prefix under which every object name lives (so many stores
// can share a bucket); the query goes to the driver unchanged, which is how
// an S3-compatible server is reached:
//
//	s3://bucket/cache?endpoint=http://127.0.0.1:7070&use_path_style=true&region=us-east-1
//
// (s3blob also knows disable_https, profile, anonymous, fips, dualstack,
// request_checksum_calculation, response_checksum_validation, ssetype,
// kmskeyid, ...; unknown parameters are an error). The parameters
// timeout, idle_timeout, max_attempts and max_backoff are this package's
// ([Network]): a stalled server fails an operation in bounded time, with
// an error naming the object, the store and its endpoint. A missing
// bucket is [ErrBucketNotFound], never store.ErrNotExist. The AWS SDK's
// log lines go to log/slog. Credentials come from
// the SDKs' usual environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
// AWS_PROFILE, instance roles; GOOGLE_APPLICATION_CREDENTIALS or the
// metadata server), never from the URI: a URI with user information is
// refused, and no credential is ever logged or put into an error.
//
// Durability: an object is one upload, which the object store makes
// visible atomically: a single PUT (S3 objects under 16 MiB, the SDK's
// multipart threshold) or one multipart upload committed by its single
// CompleteMultipartUpload (larger S3 objects; GCS uploads likewise commit
// once at the end). A Put whose context is cancelled, whose reader fails
// or holds the wrong number of bytes is aborted before that commit: the
// previous object stays readable, no partial object ever appears, and an
// aborted multipart upload's parts are deleted. (A process killed during a
// multipart upload leaves invisible parts; a bucket lifecycle rule for
// incomplete multipart uploads removes them.) PutNamed (an object named
// after its bytes, such as a content-addressed array) uploads once to a
// temporary object and has the server copy it to its name.
package blobstore
