// Package stats holds the statistics of SPEC §13 with which package compare
// compares retrieval results over their per-query values: mean and standard
// deviation, bootstrap confidence intervals (BCa and percentile), the paired
// Student's t-test, the paired sign-flip randomization test, Holm's
// adjustment and a standardised effect size.
//
// Products that are added to something are wrapped in explicit float64
// conversions, which forbid the Go compiler to fuse them into FMA
// instructions on some architectures (arm64, ppc64, s390x): results are
// bit-identical on every platform (SPEC §4.2, §13).
//
// In the spirit of gonum's stat package these are plain functions over
// []float64; every random choice comes from a *rand.Rand the caller passes
// in, and Stream derives one from a seed and labels so that a result never
// depends on threads, call order or platform.
package stats
