package memory

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func ptr(v int64) *int64 { return &v }

func TestDefaultAndAsMap(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m := c.AsMap()
	want := map[string]any{
		"max_memory_bytes": nil, "reserve_system_bytes": nil, "max_fraction": 0.75,
		"allow_disk_spill": true, "model_memory_bytes": int64(0), "raw_batch_memory_bytes": int64(0), "spill_dir": "",
	}
	if len(m) != len(want) {
		t.Fatalf("AsMap has %d fields, want %d: %v", len(m), len(want), m)
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok || got != v {
			t.Errorf("AsMap[%q] = %#v, want %#v", k, got, v)
		}
	}
	// The struct tags and AsMap agree.
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(m)
	var x, y map[string]any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	if len(x) != len(y) {
		t.Fatalf("json %s vs %s", a, b)
	}
	for k := range x {
		if x[k] != y[k] {
			t.Errorf("json field %q: %v vs %v", k, x[k], y[k])
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"max zero", func(c *Config) { c.MaxMemoryBytes = ptr(0) }, "MemoryConfig.max_memory_bytes must be >= 1"},
		{"reserve negative", func(c *Config) { c.ReserveSystemBytes = ptr(-1) }, "MemoryConfig.reserve_system_bytes must be >= 0"},
		{"fraction zero", func(c *Config) { c.MaxFraction = 0 }, "MemoryConfig.max_fraction must be in (0, 1]"},
		{"fraction big", func(c *Config) { c.MaxFraction = 1.5 }, "MemoryConfig.max_fraction must be in (0, 1]"},
		{"fraction nan", func(c *Config) { c.MaxFraction = math.NaN() }, "MemoryConfig.max_fraction must be in (0, 1]"},
		{"model", func(c *Config) { c.ModelMemoryBytes = -1 }, "MemoryConfig.model_memory_bytes must be >= 0"},
		{"raw", func(c *Config) { c.RawBatchMemoryBytes = -5 }, "MemoryConfig.raw_batch_memory_bytes must be >= 0"},
		{"ok edges", func(c *Config) { c.MaxMemoryBytes, c.ReserveSystemBytes, c.MaxFraction = ptr(1), ptr(0), 1 }, ""},
	}
	for _, tc := range cases {
		c := Default()
		tc.edit(&c)
		err := c.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var ce *ConfigError
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want prefix %q", tc.name, err, tc.want)
		}
	}
}

func TestConfigFromJSON(t *testing.T) {
	c, err := ConfigFromJSON([]byte(`{"max_memory_bytes":123456,"reserve_system_bytes":null,"max_fraction":1,
		"allow_disk_spill":false,"model_memory_bytes":10,"raw_batch_memory_bytes":2,"spill_dir":"/tmp/x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if *c.MaxMemoryBytes != 123456 || c.ReserveSystemBytes != nil || c.MaxFraction != 1 || c.AllowDiskSpill ||
		c.ModelMemoryBytes != 10 || c.RawBatchMemoryBytes != 2 || c.SpillDir != "/tmp/x" || c.FixedBytes() != 12 {
		t.Errorf("%+v", c)
	}
	if c, err := ConfigFromJSON([]byte(`{}`)); err != nil || c.MaxFraction != 0.75 || !c.AllowDiskSpill {
		t.Errorf("defaults: %+v %v", c, err)
	}
	for in, want := range map[string]string{
		`{"max_memory_bytes":"1GB"}`:                "MemoryConfig.max_memory_bytes must be an integer or null",
		`{"max_memory_bytes":true}`:                 "MemoryConfig.max_memory_bytes must be an integer or null",
		`{"max_memory_bytes":1.5}`:                  "MemoryConfig.max_memory_bytes must be an integer or null",
		`{"max_memory_bytes":0}`:                    "MemoryConfig.max_memory_bytes must be >= 1",
		`{"reserve_system_bytes":"x"}`:              "MemoryConfig.reserve_system_bytes must be an integer or null",
		`{"max_fraction":"0.5"}`:                    "MemoryConfig.max_fraction must be a number",
		`{"max_fraction":true}`:                     "MemoryConfig.max_fraction must be a number",
		`{"max_fraction":2}`:                        "MemoryConfig.max_fraction must be in (0, 1]",
		`{"allow_disk_spill":1}`:                    "MemoryConfig.allow_disk_spill must be a bool",
		`{"model_memory_bytes":null}`:               "MemoryConfig.model_memory_bytes must be an integer",
		`{"raw_batch_memory_bytes":-1}`:             "MemoryConfig.raw_batch_memory_bytes must be >= 0",
		`{"spill_dir":3}`:                           "MemoryConfig.spill_dir must be a string",
		`{"max_bytes":1}`:                           "MemoryConfig has no field",
		`[1]`:                                       "MemoryConfig must be a JSON object",
		`{"model_memory_bytes":1e30}`:               "MemoryConfig.model_memory_bytes must be an integer",
		`{"max_memory_bytes":99999999999999999999}`: "MemoryConfig.max_memory_bytes must be an integer or null",
	} {
		_, err := ConfigFromJSON([]byte(in))
		var ce *ConfigError
		if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want prefix %q", in, err, want)
		}
	}
}

func TestConfigFromMapGoTypes(t *testing.T) {
	c, err := ConfigFromMap(map[string]any{"max_memory_bytes": 64, "max_fraction": 0.5, "model_memory_bytes": uint64(3), "reserve_system_bytes": int64(0)})
	if err != nil || *c.MaxMemoryBytes != 64 || c.MaxFraction != 0.5 || c.ModelMemoryBytes != 3 || *c.ReserveSystemBytes != 0 {
		t.Errorf("%+v %v", c, err)
	}
}

func TestClone(t *testing.T) {
	c := Default()
	c.MaxMemoryBytes = ptr(5)
	d := c.Clone()
	*d.MaxMemoryBytes = 6
	if *c.MaxMemoryBytes != 5 {
		t.Error("Clone shares max_memory_bytes")
	}
}

func TestResolveWith(t *testing.T) {
	explicit := Default()
	explicit.MaxMemoryBytes = ptr(123456)
	half := Default()
	half.MaxFraction = 0.5
	reserve := Default()
	reserve.ReserveSystemBytes = ptr(100)
	reserve400 := Default()
	reserve400.ReserveSystemBytes = ptr(400)
	cases := []struct {
		name             string
		cfg              Config
		total, available int64
		ok               bool
		want             int64
	}{
		{"explicit", explicit, 0, 0, false, 123456},
		{"explicit ignores machine", explicit, 1 << 40, 1 << 40, true, 123456},
		{"reserve exceeds available", half, 16000, 400, true, 200},
		{"tiny machine", half, 1, 1, true, 1},
		{"zero available", Default(), 16000, 0, true, 1},
		// 64 GiB machine: reserve min(8, max(1, 12.8)) = 8 GiB; 0.75·32 = 24 < 32 − 8.
		{"share binds", Default(), 64 * gib, 32 * gib, true, 24 * gib},
		// 16 GiB machine: reserve 3.2 GiB; headroom 2 − 3.2 < 0 → 0.75·2 GiB.
		{"no headroom", Default(), 16 * gib, 2 * gib, true, 3 * gib / 2},
		// headroom 1000 − 100 = 900 > 0.75·1000 = 750 → 750; with reserve 400 → 600.
		{"explicit reserve share", reserve, 1000, 1000, true, 750},
		{"headroom binds", reserve400, 1000, 1000, true, 600},
		{"huge", Default(), math.MaxInt64, math.MaxInt64, true, int64(float64(math.MaxInt64) * 0.75)},
	}
	for _, tc := range cases {
		got, err := ResolveWith(tc.cfg, tc.total, tc.available, tc.ok)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestResolveUnknownMemory(t *testing.T) {
	_, err := ResolveWith(Default(), 0, 0, false)
	if err == nil || !strings.Contains(err.Error(), "cannot determine available memory; set max_memory_bytes") ||
		!strings.Contains(err.Error(), "memory budget") || !errors.Is(err, ErrUnknownMemory) {
		t.Errorf("got %v", err)
	}
	bad := Default()
	bad.MaxFraction = 0
	var ce *ConfigError
	if _, err := ResolveWith(bad, 10, 10, true); !errors.As(err, &ce) {
		t.Errorf("invalid config: got %v", err)
	}
	if _, err := Resolve(bad); !errors.As(err, &ce) {
		t.Errorf("Resolve invalid config: got %v", err)
	}
}

func TestDefaultReserve(t *testing.T) {
	for total, want := range map[int64]float64{
		0:         float64(gib),
		16000:     float64(gib),
		10 * gib:  float64(2 * gib),
		100 * gib: float64(8 * gib),
	} {
		if got := DefaultReserve(total); got != want {
			t.Errorf("DefaultReserve(%d) = %v, want %v", total, got, want)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	total, avail, ok := parseMeminfo([]byte("MemTotal:       16000 kB\nMemFree:  10 kB\nMemAvailable:     400 kB\nHugePages_Total: 0\n"))
	if !ok || total != 16000*1024 || avail != 400*1024 {
		t.Errorf("got %d %d %v", total, avail, ok)
	}
	total, avail, ok = parseMeminfo([]byte("MemTotal: 100 kB\nMemFree: 10 kB\nBuffers: 1 kB\nCached: 2 kB\n"))
	if !ok || total != 100*1024 || avail != 13*1024 {
		t.Errorf("old kernel: got %d %d %v", total, avail, ok)
	}
	if _, _, ok := parseMeminfo([]byte("garbage\nMemTotal: x kB\n")); ok {
		t.Error("garbage parsed")
	}
}

func TestResolveOnThisMachine(t *testing.T) {
	total, avail, ok := SystemMemory()
	if !ok {
		t.Skip("machine memory not readable here")
	}
	if total <= 0 || avail < 0 {
		t.Fatalf("total %d available %d", total, avail)
	}
	b, err := Resolve(Default())
	if err != nil || b < 1 || b > avail && avail > 0 {
		t.Errorf("budget %d, %v (available %d)", b, err, avail)
	}
}
