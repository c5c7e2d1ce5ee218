package onnxpb

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestMarshalWithMetadata: metadata_props (ModelProto field 14) follow the
// plain encoding, one StringStringEntryProto per key in sorted order.
func TestMarshalWithMetadata(t *testing.T) {
	m := Model{Graph: Graph{Name: "g"}}
	plain := m.Marshal()
	got := m.MarshalWithMetadata(map[string]string{"zeta": "last", "alpha": "first"})
	if !bytes.HasPrefix(got, plain) {
		t.Fatal("metadata must be appended to the plain encoding")
	}
	rest := got[len(plain):]
	var keys, values []string
	for len(rest) > 0 {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || num != 14 || typ != protowire.BytesType {
			t.Fatalf("field %d type %d", num, typ)
		}
		rest = rest[n:]
		entry, n := protowire.ConsumeBytes(rest)
		rest = rest[n:]
		for len(entry) > 0 {
			f, _, n := protowire.ConsumeTag(entry)
			entry = entry[n:]
			s, n := protowire.ConsumeString(entry)
			entry = entry[n:]
			if f == 1 {
				keys = append(keys, s)
			} else {
				values = append(values, s)
			}
		}
	}
	if len(keys) != 2 || keys[0] != "alpha" || keys[1] != "zeta" || values[0] != "first" || values[1] != "last" {
		t.Fatalf("keys %v values %v", keys, values)
	}
	if !bytes.Equal(m.MarshalWithMetadata(nil), plain) {
		t.Fatal("no metadata must give the plain encoding")
	}
}
