package blobstore

import "time"

// SetCopyParts makes s copy objects above limit bytes in parts of part
// bytes, so a test reaches the multipart copy without a 5 GiB object.
func SetCopyParts(s *Store, limit, part int64) { s.singleCopyLimit, s.copyPartBytes = limit, part }

// SetStaleTempAge sets the age beyond which a PutNamed deletes temporary
// objects under its prefix.
func SetStaleTempAge(s *Store, d time.Duration) { s.staleTempAge = d }
