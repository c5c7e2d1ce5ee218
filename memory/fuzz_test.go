package memory

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzConfigFromJSON: any input either fails with a *ConfigError or yields a
// valid config that survives an AsMap → JSON → ConfigFromJSON round trip.
func FuzzConfigFromJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"max_memory_bytes":123456}`, `{"max_memory_bytes":null,"reserve_system_bytes":0}`,
		`{"max_fraction":0.5,"allow_disk_spill":false,"spill_dir":"/tmp"}`,
		`{"model_memory_bytes":1e3,"raw_batch_memory_bytes":9223372036854775807}`, `{"x":1}`, `[]`, `{"max_fraction":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ConfigFromJSON(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%q: error %T %v is not a *ConfigError", data, err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: accepted an invalid config: %v", data, err)
		}
		if c.FixedBytes() < 0 {
			t.Fatalf("%q: negative fixed charge", data)
		}
		out, err := json.Marshal(c.AsMap())
		if err != nil {
			t.Fatal(err)
		}
		back, err := ConfigFromJSON(out)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("%q: round trip %s gave %+v, %v; want %+v", data, out, back, err, c)
		}
		if _, err := ResolveWith(c, 1<<34, 1<<33, true); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
	})
}
