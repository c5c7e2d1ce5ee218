package cli

import (
	"strconv"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/bytesize"
)

// byteSize is a flag value in bytes that accepts the suffixes people type
// (internal/bytesize), so --max-memory-bytes 4G works.
type byteSize struct{ v *int64 }

// parseByteSize is bytesize.Parse.
func parseByteSize(s string) (int64, error) { return bytesize.Parse(s) }

func (b byteSize) String() string {
	if b.v == nil {
		return "0"
	}
	return strconv.FormatInt(*b.v, 10)
}

func (b byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b.v = n
	return nil
}

func (byteSize) Type() string { return "bytes" }
