// Package compare computes the `comparison` section of a report (SPEC
// §13, §6.6) from the per-query values of the results that evaluate
// produced, before the report writers render it: per result the mean,
// standard deviation and bootstrap interval of a metric, per pair of
// results the mean difference with its interval, the paired t-test, the
// paired sign-flip randomization test, Holm-adjusted p-values, a
// significance decision and an effect size. The statistics themselves live
// in package stats; this package chooses the family of pairs, the random
// streams and the layout.
package compare
