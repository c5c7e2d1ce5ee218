package memory

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"strconv"
)

// ErrUnknownMemory is returned when the machine's memory cannot be read and
// no explicit max_memory_bytes is set (SPEC §7.2).
var ErrUnknownMemory = errors.New("cannot determine available memory; set max_memory_bytes to give an explicit memory budget")

const (
	gib            = int64(1) << 30
	minReserve     = 1 * gib
	maxReserve     = 8 * gib
	reserveOfTotal = 0.2
)

// Resolve returns the resident budget in bytes for cfg on this machine
// (SPEC §7.2). Invalid configurations fail with *ConfigError.
func Resolve(cfg Config) (int64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if cfg.MaxMemoryBytes != nil {
		// The machine is not consulted: an explicit budget must work
		// where /proc/meminfo does not exist.
		return *cfg.MaxMemoryBytes, nil
	}
	total, available, ok := SystemMemory()
	return ResolveWith(cfg, total, available, ok)
}

// ResolveWith is Resolve with the machine's total and available memory
// (bytes) given; ok=false means they could not be read.
func ResolveWith(cfg Config, total, available int64, ok bool) (int64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if cfg.MaxMemoryBytes != nil {
		return *cfg.MaxMemoryBytes, nil
	}
	if !ok {
		return 0, ErrUnknownMemory
	}
	reserve := DefaultReserve(total)
	if cfg.ReserveSystemBytes != nil {
		reserve = float64(*cfg.ReserveSystemBytes)
	}
	avail := float64(available)
	share := avail * cfg.MaxFraction
	var limit float64
	if headroom := avail - reserve; headroom > 0 {
		limit = math.Min(share, headroom)
	} else {
		limit = math.Max(1, share)
	}
	limit = math.Floor(limit)
	switch {
	case !(limit >= 1): // also catches NaN
		return 1, nil
	case limit >= math.MaxInt64: // float64(MaxInt64) rounds up to 2^63
		return math.MaxInt64, nil
	}
	return int64(limit), nil
}

// DefaultReserve is the reserve used when reserve_system_bytes is null:
// min(8 GiB, max(1 GiB, 0.2·total)).
func DefaultReserve(total int64) float64 {
	return math.Min(float64(maxReserve), math.Max(float64(minReserve), reserveOfTotal*float64(total)))
}

// parseMeminfo reads MemTotal and MemAvailable (kB) from /proc/meminfo text.
// Kernels older than 3.14 lack MemAvailable; MemFree + Buffers + Cached is
// the estimate they documented for it.
func parseMeminfo(data []byte) (total, available int64, ok bool) {
	vals := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, rest, found := bytes.Cut(sc.Bytes(), []byte(":"))
		if !found {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil || n < 0 {
			continue
		}
		unit := int64(1)
		if len(fields) > 1 && string(fields[1]) == "kB" {
			unit = 1024
		}
		if n > math.MaxInt64/unit {
			n = math.MaxInt64 / unit
		}
		vals[string(key)] = n * unit
	}
	total, okTotal := vals["MemTotal"]
	available, okAvail := vals["MemAvailable"]
	if !okAvail {
		free, a := vals["MemFree"]
		buffers, b := vals["Buffers"]
		cached, c := vals["Cached"]
		if a && b && c {
			available, okAvail = free+buffers+cached, true
		}
	}
	if !okTotal || !okAvail {
		return 0, 0, false
	}
	return total, available, true
}
