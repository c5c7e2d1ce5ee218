package msgfmt

import (
	"bytes"
	"encoding/json"
	"strings"
)

// PreviewLimit is how many items a preview list shows (SPEC §1.3).
const PreviewLimit = 10

// Quote writes s as a JSON string literal without HTML escaping.
func Quote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return `"` + s + `"` // unreachable: strings always encode
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// IDList renders up to PreviewLimit IDs as `["a", "b", ...]`, appending
// ", ..." inside the bracket when more exist.
func IDList(ids []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i == PreviewLimit {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quote(id))
	}
	b.WriteByte(']')
	return b.String()
}
