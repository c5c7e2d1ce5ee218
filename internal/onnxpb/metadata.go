package onnxpb

import "sort"

// MarshalWithMetadata is Marshal followed by the ModelProto's
// metadata_props (field 14, StringStringEntryProto key=1 value=2), one entry
// per key in sorted order so the bytes stay a pure function of the
// arguments. Protobuf allows fields in any order, so appending them to
// Marshal's output gives a valid ModelProto.
func (m Model) MarshalWithMetadata(props map[string]string) []byte {
	b := m.Marshal()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var entry []byte
		entry = appendStringField(entry, 1, k)
		entry = appendStringField(entry, 2, props[k])
		b = appendMessage(b, 14, entry)
	}
	return b
}
