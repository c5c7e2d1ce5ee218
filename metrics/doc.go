// Package metrics turns the ranks of a query's positives, as the scorer
// (package rank) reports them, into the per-query metrics of SPEC §4.4–§4.5
// and aggregates them (SPEC §4.6–§4.7), for evaluate and the reports.
package metrics
