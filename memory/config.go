package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/vertebrae-eval/vertebrae/internal/confval"
)

// Config is the MemoryConfig of SPEC §7.1. None of its fields is part of any
// identity or fingerprint: they only decide where endpoint rows live.
type Config struct {
	// MaxMemoryBytes is an explicit resident budget (>= 1); nil derives the
	// budget from the machine.
	MaxMemoryBytes *int64 `json:"max_memory_bytes"`
	// ReserveSystemBytes is left for the OS (>= 0); nil uses
	// min(8 GiB, max(1 GiB, 0.2·MemTotal)).
	ReserveSystemBytes *int64 `json:"reserve_system_bytes"`
	// MaxFraction is the usable fraction of available memory, in (0, 1].
	MaxFraction float64 `json:"max_fraction"`
	// AllowDiskSpill stages rows in temporary files instead of failing.
	AllowDiskSpill bool `json:"allow_disk_spill"`
	// ModelMemoryBytes is a fixed charge for resident model state (>= 0).
	ModelMemoryBytes int64 `json:"model_memory_bytes"`
	// RawBatchMemoryBytes is a fixed charge for one batch of raw inputs (>= 0).
	RawBatchMemoryBytes int64 `json:"raw_batch_memory_bytes"`
	// SpillDir is where spill directories are created; "" is os.TempDir().
	SpillDir string `json:"spill_dir"`
}

// Default returns the defaults of SPEC §7.1.
func Default() Config {
	return Config{MaxFraction: 0.75, AllowDiskSpill: true}
}

// ConfigError is an invalid MemoryConfig value or type. Its message starts
// "MemoryConfig.<field>" ("MemoryConfig has no field" for unknown keys).
type ConfigError struct {
	Field string // JSON field name, "" for an unknown key or a non-object
	Msg   string
}

func (e *ConfigError) Error() string { return e.Msg }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Clone returns a deep copy (the pointer fields are not shared).
func (c Config) Clone() Config {
	if c.MaxMemoryBytes != nil {
		v := *c.MaxMemoryBytes
		c.MaxMemoryBytes = &v
	}
	if c.ReserveSystemBytes != nil {
		v := *c.ReserveSystemBytes
		c.ReserveSystemBytes = &v
	}
	return c
}

// Validate checks the range rules of SPEC §7.1, in table order.
func (c Config) Validate() error {
	if c.MaxMemoryBytes != nil && *c.MaxMemoryBytes < 1 {
		return configErr("max_memory_bytes", "MemoryConfig.max_memory_bytes must be >= 1 when set; got %d", *c.MaxMemoryBytes)
	}
	if c.ReserveSystemBytes != nil && *c.ReserveSystemBytes < 0 {
		return configErr("reserve_system_bytes", "MemoryConfig.reserve_system_bytes must be >= 0 when set; got %d", *c.ReserveSystemBytes)
	}
	// Written so that NaN fails too.
	if !(c.MaxFraction > 0 && c.MaxFraction <= 1) {
		return configErr("max_fraction", "MemoryConfig.max_fraction must be in (0, 1]; got %v", c.MaxFraction)
	}
	if c.ModelMemoryBytes < 0 {
		return configErr("model_memory_bytes", "MemoryConfig.model_memory_bytes must be >= 0; got %d", c.ModelMemoryBytes)
	}
	if c.RawBatchMemoryBytes < 0 {
		return configErr("raw_batch_memory_bytes", "MemoryConfig.raw_batch_memory_bytes must be >= 0; got %d", c.RawBatchMemoryBytes)
	}
	return nil
}

// FixedBytes is the fixed charge F = model_memory_bytes +
// raw_batch_memory_bytes of SPEC §7.4, saturating at math.MaxInt64.
func (c Config) FixedBytes() int64 {
	if c.ModelMemoryBytes > math.MaxInt64-c.RawBatchMemoryBytes {
		return math.MaxInt64
	}
	return c.ModelMemoryBytes + c.RawBatchMemoryBytes
}

// AsMap returns every field under its JSON name; unset optional fields are
// nil (JSON null).
func (c Config) AsMap() map[string]any {
	var maxBytes, reserve any
	if c.MaxMemoryBytes != nil {
		maxBytes = *c.MaxMemoryBytes
	}
	if c.ReserveSystemBytes != nil {
		reserve = *c.ReserveSystemBytes
	}
	return map[string]any{
		"max_memory_bytes":       maxBytes,
		"reserve_system_bytes":   reserve,
		"max_fraction":           c.MaxFraction,
		"allow_disk_spill":       c.AllowDiskSpill,
		"model_memory_bytes":     c.ModelMemoryBytes,
		"raw_batch_memory_bytes": c.RawBatchMemoryBytes,
		"spill_dir":              c.SpillDir,
	}
}

// ConfigFromMap builds a Config from decoded JSON/YAML. Absent keys keep
// their defaults; type errors, unknown keys and range errors are
// *ConfigError values. Keys are processed in sorted order so that the
// reported error does not depend on map iteration.
func ConfigFromMap(m map[string]any) (Config, error) {
	c := Default()
	for _, k := range confval.SortedKeys(m) {
		v := m[k]
		var err error
		switch k {
		case "max_memory_bytes":
			c.MaxMemoryBytes, err = asOptInt(k, v)
		case "reserve_system_bytes":
			c.ReserveSystemBytes, err = asOptInt(k, v)
		case "max_fraction":
			c.MaxFraction, err = asFloat(k, v)
		case "allow_disk_spill":
			b, ok := v.(bool)
			if !ok {
				err = configErr(k, "MemoryConfig.%s must be a bool; got %s", k, confval.Describe(v))
			}
			c.AllowDiskSpill = b
		case "model_memory_bytes":
			c.ModelMemoryBytes, err = asInt(k, v)
		case "raw_batch_memory_bytes":
			c.RawBatchMemoryBytes, err = asInt(k, v)
		case "spill_dir":
			s, ok := v.(string)
			if !ok {
				err = configErr(k, "MemoryConfig.%s must be a string; got %s", k, confval.Describe(v))
			}
			c.SpillDir = s
		default:
			return c, configErr("", "MemoryConfig has no field %q", k)
		}
		if err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// ConfigFromJSON decodes a JSON object into a Config (see ConfigFromMap).
func ConfigFromJSON(data []byte) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return Config{}, configErr("", "MemoryConfig must be a JSON object: %v", err)
	}
	return ConfigFromMap(m)
}

func asOptInt(field string, v any) (*int64, error) {
	if v == nil {
		return nil, nil
	}
	n, err := asInt(field, v)
	if err != nil {
		return nil, configErr(field, "MemoryConfig.%s must be an integer or null; got %s", field, confval.Describe(v))
	}
	return &n, nil
}

func asInt(field string, v any) (int64, error) {
	n, ok := confval.Int64(v)
	if !ok {
		return 0, configErr(field, "MemoryConfig.%s must be an integer; got %s", field, confval.Describe(v))
	}
	return n, nil
}

func asFloat(field string, v any) (float64, error) {
	f, ok := confval.Float(v)
	if !ok {
		return 0, configErr(field, "MemoryConfig.%s must be a number; got %s", field, confval.Describe(v))
	}
	return f, nil
}
